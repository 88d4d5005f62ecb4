import { describe, expect, it } from "vitest";
import { commandParts } from "./command-parts.js";
import { checkCommand, compilePatterns, type GuardPolicy } from "./guard.js";

const open: GuardPolicy = {
  denyPatterns: [],
  allowPatterns: [],
  restrictToWorkspace: false,
  workspace: "/home/u/.pincer/workspace",
  media: "/home/u/.pincer/media",
  home: "/home/u/.pincer",
};

function verdict(command: string, policy: GuardPolicy = open): string {
  return checkCommand(command, policy) ?? "allowed";
}

describe("commandParts", () => {
  it.each([
    ["ls -la", ["ls -la"]],
    ["a; b && c || d | e & f", ["a", "b", "c", "d", "e", "f"]],
    ["a\nb", ["a", "b"]],
    ["echo $(whoami)", ["whoami", "echo $(whoami)"]],
    ["echo `id`", ["id", "echo `id`"]],
    ['echo "x $(rm -rf y) z"', ["rm -rf y", 'echo "x $(rm -rf y) z"']],
    ["(cd a && make)", ["cd a", "make"]],
    ["cat <(curl x)", ["curl x", "cat <"]],
    ["echo 'a; b | c'", ["echo 'a; b | c'"]],
    ["make 2>&1 | tee log", ["make 2>&1", "tee log"]],
    ["cmd &> out", ["cmd &> out"]],
    ["FOO=1 BAR='x y' git status", ["git status"]],
    ["if test -f a; then cat a; else echo no; fi", ["test -f a", "cat a", "echo no"]],
    ["for f in *.md; do wc -l $f; done", ["wc -l $f"]],
    ["{ echo a; echo b; } > out", ["echo a", "echo b", "> out"]],
    ["echo $((1+2))", ["echo $((1+2))"]],
    ["ls # ; rm -rf x", ["ls"]],
    ["echo \\; ls", ["echo \\; ls"]],
  ])("%s", (command, parts) => {
    expect(commandParts(command)).toEqual(parts);
  });
});

describe("checkCommand: default deny patterns", () => {
  it.each([
    ["rm -rf /", "recursive rm"],
    ["rm -r build", "recursive rm"],
    ["rm -fr build", "recursive rm"],
    ["rm -f -R build", "recursive rm"],
    ["rm --recursive build", "recursive rm"],
    ["sudo rm -Rf ~", "recursive rm"],
    ["find . -name x | xargs rm -rf", "recursive rm"],
    ["echo ok && rm -rf .", "recursive rm"],
    ["echo $(rm -rf .)", "recursive rm"],
    ["mkfs.ext4 /dev/sda1", "formatting"],
    ["mkfs -t ext4 /dev/sdb", "formatting"],
    ["wipefs -a /dev/sda", "formatting"],
    ["diskpart", "partitioning"],
    ["format c:", "formatting"],
    ["dd if=/dev/zero of=/dev/sda bs=1M", "dd to a device"],
    ["dd if=x.img of=/dev/mmcblk0", "dd to a device"],
    ["echo hi > /dev/sda", "block device"],
    ["cat x >/dev/nvme0n1", "block device"],
    ["cat img | tee /dev/sdb", "block device"],
    ["shutdown -h now", "shutting down"],
    ["sudo reboot", "shutting down"],
    ["ls; poweroff", "shutting down"],
    ["/sbin/halt", "shutting down"],
    ["systemctl reboot", "shutting down"],
    ["init 0", "shutting down"],
    [":(){ :|:& };:", "fork bomb"],
    ["bomb() { bomb | bomb & }; bomb", "fork bomb"],
  ])("blocks %s", (command, reason) => {
    expect(verdict(command)).toContain(reason);
  });

  it.each([
    "ls -la",
    "rm notes.txt",
    "rm -f a.txt b.txt",
    "git log --format=%H -n 3",
    "echo reboot the router later",
    "dd if=/dev/zero of=/dev/null count=1",
    "dd if=in.bin of=out.bin",
    "cat a > /dev/null 2>&1",
    "grep -r TODO src",
    "python3 -c 'print(1)'",
    "npm run format",
  ])("lets %s through", (command) => {
    expect(verdict(command)).toBe("allowed");
  });
});

describe("checkCommand: configured patterns", () => {
  it("stops the start naming the pattern that is not a regex, as the config file names it for its agent", () => {
    expect(() => compilePatterns(["^ls", "("], "exec.denyPatterns")).toThrow(
      /^PINCER_CONFIG: exec.denyPatterns\[1\] is/,
    );
    expect(() => compilePatterns(["("], "exec.allowPatterns", "shop")).toThrow(
      /^PINCER_CONFIG: agents.shop.exec.allowPatterns\[0\] is not a valid regular expression/,
    );
  });

  it("applies extra deny patterns case-insensitively", () => {
    const policy = { ...open, denyPatterns: compilePatterns(["\\bcurl\\b", "git\\s+push"], "exec.denyPatterns") };
    expect(verdict("CURL https://example.org", policy)).toContain("deny pattern");
    expect(verdict("git  push origin", policy)).toContain("deny pattern");
    expect(verdict("git status", policy)).toBe("allowed");
  });

  const allow = { ...open, allowPatterns: compilePatterns(["^git\\b", "^ls\\b", "^echo\\b", "^wc\\b"], "x") };
  it.each([
    ["git status", "allowed"],
    ["ls && git log | wc -l", "allowed"],
    ["FOO=1 git status", "sets a variable"],
    ["LD_PRELOAD=./x.so ls", "sets a variable"],
    ["env -i X=1 ls", '"env -i X=1 ls" is not in'],
    ["echo x >> AGENTS.md", "writes to a file"],
    ["ls > /dev/null 2>&1", "allowed"],
    ["", "runs nothing"],
    ["ls; cat secret", 'does not cover this command: "cat secret" is not in it'],
    ["git status || curl x", '"curl x" is not in'],
    ["ls | sh", '"sh" is not in'],
    ["echo $(cat /etc/passwd)", '"cat /etc/passwd" is not in'],
    ["echo `whoami`", "cannot prove what it runs: backticks"],
    ["echo a\\ #;touch x", '"touch x" is not in'],
    ["echo $(( $(touch x) 0 ))", "cannot prove what it runs: $(( … )) arithmetic"],
    ["echo hi; case x in x) touch x;; esac", "cannot prove what it runs: case … esac"],
    ["(ls; id)", '"id" is not in'],
    ['echo "$(id)"', '"id" is not in'],
    ["ls & python3 x.py", '"python3 x.py" is not in'],
  ])("with an allowlist, %s → %s", (command, expected) => {
    expect(verdict(command, allow)).toContain(expected);
  });

  it("names the setting and index of an invalid pattern", () => {
    expect(() => compilePatterns(["ok", "(unclosed"], "exec.denyPatterns")).toThrow(/exec\.denyPatterns\[1\]/);
  });
});

describe("checkCommand: workspace paths", () => {
  const strict = { ...open, restrictToWorkspace: true };
  it.each([
    ["cat ../secret", "paths with .."],
    ["cd .. && ls", "paths with .."],
    ["cat sub/../../x", "paths with .."],
    ["ls ~", "~ is not allowed"],
    ["cat ~/.ssh/id_rsa", "~ is not allowed"],
    ["ls ~root", "~ is not allowed"],
    ["cat /etc/shadow", "/etc/shadow is outside the workspace"],
    ["ls /", "/ is outside"],
    ["cat /home/u/.pincer/.env", "/home/u/.pincer/.env is pincer's own data folder"],
    ["cat /home/u/.pincer/workspace-evil/x", "/home/u/.pincer/workspace-evil/x is pincer's own data folder"],
    ["cat /home/u/other", "/home/u/other is outside"],
    ["cp a.txt '/root/x'", "/root/x is outside"],
    ["tar -C/var/lib -x", "is outside"],
    ["echo x >/etc/hosts", "/etc/hosts is outside"],
    ["python3 --file=/root/y", "/root/y is outside"],
    ["cat /home/u/.pincer/workspace/../pincer.db", "paths with .."],
  ])("refuses %s", (command, reason) => {
    expect(verdict(command, strict)).toContain(reason);
  });

  it.each([
    "cat notes/today.md",
    "ls -la .",
    "cat ./a..b.txt",
    "cat /home/u/.pincer/workspace/notes.md",
    "ls /home/u/.pincer/workspace",
    "file /home/u/.pincer/media/photo.jpg",
    "make > /dev/null 2>&1",
    "sort big.txt > /tmp/sorted && head /tmp/sorted",
    "/usr/bin/env python3 script.py",
    "curl -s https://example.org/a/b",
    "echo $((10/2))",
  ])("allows %s", (command) => {
    expect(verdict(command, strict)).toBe("allowed");
  });

  it("refuses PINCER_HOME even where /tmp would be fine", () => {
    const inTmp = { ...strict, home: "/tmp/h", workspace: "/tmp/h/workspace", media: "/tmp/h/media" };
    expect(verdict("cat /tmp/h/.env", inTmp)).toContain("/tmp/h/.env is pincer's own data folder");
    expect(verdict("cat /tmp/h/workspace/a /tmp/h/media/b /tmp/other", inTmp)).toBe("allowed");
  });

  it("skips path checks when restrictToWorkspace is off (the sandbox still hides the host)", () => {
    expect(verdict("cat /etc/os-release && ls ..", open)).toBe("allowed");
  });
});
