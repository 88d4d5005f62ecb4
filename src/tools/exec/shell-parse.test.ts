import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { unlisted } from "./command-parts.js";
import { parseCommands } from "./shell-parse.js";

// Shell text, not template strings: `${…}` in these is the shell's parameter expansion.
const BRACE = "$" + "{";

const LISTED = [/^echo\b/, /^cat\b/, /^ls\b/, /^true$/, /^printf\b/, /^grep\b/, /^test\b/, /^wc\b/].map(
  (p) => new RegExp(p.source, "i"),
);
const names = (command: string) => {
  const parsed = parseCommands(command);
  return "unproven" in parsed ? parsed.unproven : parsed.commands.map((c) => c.text);
};

/** Every spelling here runs `touch` somewhere (in dash, in bash, or both): none may pass an allowlist without it. */
const SNEAKY = [
  // The three of issue 36.
  "echo $(( $(touch x) 0 ))",
  "echo a\\ #;touch x",
  "echo hi; case x in x) touch x;; esac",
  // Arithmetic, in every form.
  "echo $(( $(touch x) + 1 ))",
  "echo $[ $(touch x) ]",
  "((x=$(touch x)))",
  'echo "$(( `touch x` ))"',
  // Comments and escapes.
  "echo a\\\n#b; touch x",
  "echo a#b;touch x",
  "echo \\#;touch x",
  "echo '#';touch x",
  "echo $#;touch x",
  `echo ${BRACE}#x};touch x`,
  "echo a \\\ntouch x",
  // Quotes that dash and bash read apart.
  "echo $'\\' ; touch x ; #'",
  'echo $"x" ; touch x',
  // Backticks and substitutions anywhere.
  "echo `touch x`",
  'echo "`touch x`"',
  "echo $(echo $(touch x))",
  'echo "$(touch x)"',
  `echo ${BRACE}x:-$(touch x)}`,
  `echo ${BRACE}x:=\`touch x\`}`,
  "cat <(touch x)",
  "echo >(touch x)",
  // Here-documents expand.
  "cat <<EOF\n$(touch x)\nEOF",
  "cat <<EOF\n`touch x`\nEOF",
  "cat <<'EOF'\nEOF\ntouch x",
  "cat <<-EOF\n\t$(touch x)\n\tEOF",
  'cat <<E "a\nE\n$(touch x)\n"',
  // Compound commands, functions, groups, subshells.
  "if true; then touch x; fi",
  "for i in 1; do touch x; done",
  "while false; do :; done; touch x",
  "{ echo a; touch x; }",
  "(echo a; touch x)",
  "echo() { touch x; }; echo",
  "function f { touch x; }; f",
  "echo a | touch x",
  "echo a && touch x || echo b",
  "echo a & touch x",
  "echo a |& touch x",
  "echo a &>/dev/null touch x",
  "! touch x",
  "time touch x",
  "coproc touch x",
  "[[ $(touch x) ]]",
  // Commands that run their arguments.
  "eval touch x",
  "eval 'echo; touch x'",
  "env touch x",
  "echo x | xargs touch",
  "sh -c 'touch x'",
  "bash -c 'touch x'",
  "exec touch x",
  "command touch x",
  "nohup touch x",
  "timeout 5 touch x",
  "trap 'touch x' EXIT; echo",
  "alias echo='touch x'\necho",
  ". ./script",
  // Variables that change what runs.
  "PATH=. echo",
  "x=$(touch x)",
  "export PATH=.; echo",
  "$(echo touch) x",
  "t*ch x",
];

/** Spellings that look sneaky but run only what they show. */
const PLAIN = [
  'echo "a\\"; touch x; echo \\""',
  "echo 'a\\'; echo b",
  "echo a; echo b | cat",
  "if true; then echo y; fi",
  "for i in 1 2; do echo $i; done",
  "echo $(echo $(echo a))",
  "cat <<'EOF'\n$(touch x)\nEOF\necho after",
  "echo a \\# b; echo c",
  "echo a#b c",
  "{ echo a; echo b; } 2>/dev/null",
];

describe("parseCommands and the allowlist", () => {
  it.each(SNEAKY)("%j is never listed by patterns that do not name touch", (command) => {
    expect(
      unlisted(command, [...LISTED, /^(?:eval|env|xargs|sh|bash|exec|command|nohup|timeout|trap|alias|\.) /]),
    ).toBeDefined();
  });

  it.each([
    ["ls -la && git log | wc -l", ["ls -la", "git log", "wc -l"]],
    ["if test -f a; then cat a; elif x; then y; else echo no; fi", ["test -f a", "cat a", "x", "y", "echo no"]],
    ['for f in *.md; do wc -l "$f"; done', ['wc -l "$f"']],
    ["for f in $(ls)\ndo\n  wc -l $f\ndone", ["ls", "wc -l $f"]],
    ['while read l; do echo "$l"; done < list.txt', ["read l", 'echo "$l"']],
    ["until test -f done; do sleep 1; done", ["test -f done", "sleep 1"]],
    ["{ echo a; echo b; } >/dev/null 2>&1", ["echo a", "echo b"]],
    ["(cd a && make) 2>&1 | tee /dev/null", ["cd a", "make", "tee /dev/null"]],
    [`echo ${BRACE}HOME} $1 $# "$(id -u)" "$"`, ["id -u", `echo ${BRACE}HOME} $1 $# "$(id -u)" "$"`]],
    ["ls # ; rm x", ["ls"]],
    ["# only a comment\nls", ["ls"]],
    ["echo \\; ls", ["echo \\; ls"]],
    ["echo 'a; b | c' \"d && e\"", ["echo 'a; b | c' \"d && e\""]],
    ["cat <<'EOF'\n$(rm x) `rm y` ; rm z\nEOF\necho after", ["cat", "echo after"]],
    ["cat <<EOF | wc -l\nplain text\nEOF", ["cat", "wc -l"]],
    ['cat <<-"E"\n\t$(rm x)\n\tE', ["cat"]],
    ["grep -c x a.txt 2>/dev/null || echo 0", ["grep -c x a.txt", "echo 0"]],
    ["! grep -q x f && echo missing", ["grep -q x f", "echo missing"]],
    ["echo a &>/dev/null; ls", ["echo a", "ls"]],
    ["ls\n\n  ls -l   # two\n", ["ls", "ls -l"]],
    ["find . -name \\*.ts", ["find . -name \\*.ts"]],
    ["git log --format='%h %s' -n 3", ["git log --format='%h %s' -n 3"]],
  ])("%j runs %j", (command, expected) => {
    expect(names(command)).toEqual(expected);
  });

  it.each([
    ["echo $(( 1 + 2 ))", "$(( … )) arithmetic"],
    ["echo `id`", "backticks"],
    ["case x in x) ;; esac", "case … esac"],
    ["f() { ls; }", "a function definition"],
    ["echo a\\\nb", "a \\ at the end of a line"],
    ["cat <<EOF\n$HOME\nEOF", "a here-document that expands"],
    [`echo ${BRACE}x:-y}`, `${BRACE} … } with an operator`],
    ["echo 'open", "an unclosed '"],
    ['echo "open', 'an unclosed "'],
    ["echo $(ls", 'a missing ")"'],
    ["if true; then ls", 'a missing "fi"'],
    ["ls ;; ls", '";" where a command should start'],
    ["cat <<<x", "<<< (bash only)"],
    ["ls <>f", "<> opens a file to write"],
    ["ls >&log", ">&log writes to a file"],
    ["ls >log", "it writes to a file (>)"],
    ["ls 2>>log", "it writes to a file (>)"],
    [`${"( ".repeat(40)}ls${")".repeat(40)}`, "levels of nesting"],
    [`${"$(".repeat(40)}ls${")".repeat(40)}`, "levels of nesting"],
  ])("refuses %j: %s", (command, why) => {
    const parsed = parseCommands(command);
    expect("unproven" in parsed && parsed.unproven).toContain(why);
  });

  it("says why the allowlist does not cover a command", () => {
    expect(unlisted("echo hi; case x in x) touch x;; esac", LISTED)).toBe(
      "pincer cannot prove what it runs: case … esac",
    );
    expect(unlisted("echo a\\ #;touch x", LISTED)).toBe('"touch x" is not in it');
    expect(unlisted("env ls", [/^env\b/])).toMatch(/"env" runs other commands/);
    expect(unlisted("find . -exec rm {} +", [/^find\b/])).toMatch(/find -exec runs other commands/);
    expect(unlisted("$HOME/x", [/x/])).toMatch(/only known when it runs/);
    expect(unlisted("echo x > AGENTS.md", LISTED)).toBe("it writes to a file (>)");
    expect(unlisted("FOO=1 ls", LISTED)).toBe("it sets a variable for the command it runs (X=… cmd)");
    expect(unlisted("# nothing", LISTED)).toBe("it runs nothing");
    expect(unlisted("ls -la | grep x && echo ok 2>&1 >/dev/null", LISTED)).toBeUndefined();
  });

  it("reads a long or hostile command in time linear in it, up to 20,000 characters (longer ones are asked about)", () => {
    expect(parseCommands(`echo ${"a".repeat(20_000)}`)).toEqual({
      unproven: "a command longer than 20,000 characters",
    });
    for (const hostile of [
      "echo ".repeat(4000),
      `echo ${"'a'".repeat(6600)}`,
      "1".repeat(20_000),
      `cat <<'E'\n${"x\n".repeat(9990)}E`,
      "ls;".repeat(6600),
      `echo ${"$(ls)".repeat(3990)}`,
      `${"$(".repeat(10)}${"a".repeat(19_000)}`,
      `echo "${"\\$".repeat(9990)}"`,
    ]) {
      const started = performance.now();
      parseCommands(hostile);
      // Milliseconds on an idle machine; the bound leaves room for a loaded one.
      expect(performance.now() - started).toBeLessThan(1500);
    }
  });
});

/**
 * What dash and bash really run (traced with -x, in an empty folder) is always among what parseCommands found: the
 * proof is checked against both shells a `sh` can be, on every spelling above that it accepts.
 */
describe("against the real shells", () => {
  const shells = [
    ["dash", "/usr/bin/dash"],
    ["bash as sh", "/usr/bin/bash"],
  ].filter(([, path]) => existsSync(path));

  // What some allowlist could let through: proven, and no program among the ones that run others.
  const accepted = [...SNEAKY, ...PLAIN]
    .filter((command) => unlisted(command, [/.*/]) === undefined)
    .map((command) => ({ command, parsed: parseCommands(command) }));

  it.each(shells)("every command %s runs was found", (_name, shell) => {
    expect(accepted.length).toBeGreaterThan(10);
    for (const { command, parsed } of accepted) {
      const dir = mkdtempSync(join(tmpdir(), "pincer-parse-"));
      try {
        const found = "commands" in parsed ? parsed.commands.map((c) => c.words[0].replace(/['"\\]/g, "")) : [];
        const trace = () => {
          rmSync(join(dir, "x"), { force: true });
          const run = spawnSync(shell, shell.endsWith("bash") ? ["--posix", "-xc", command] : ["-xc", command], {
            cwd: dir,
            input: "",
            encoding: "utf8",
            timeout: 5000,
            env: { PATH: "/usr/bin:/bin", PS4: "+TRACE " },
            argv0: "sh",
          });
          // Split at each trace mark, not at lines: the two ends of a pipe trace at once, and their lines interleave.
          return run.stderr
            .split(/\+*TRACE /)
            .slice(1)
            .map((traced) => traced.split(/\s/)[0].replace(/['"\\]/g, ""))
            .filter((name) => name !== "");
        };
        // The ends of a pipe trace word by word at once, so a name can come out spliced ("echotouch"): that varies
        // from run to run, a program the parser missed does not, so a trace with a name not found is taken again.
        let ran = trace();
        for (let tries = 1; tries < 5 && ran.some((name) => !found.includes(name)); tries++) ran = trace();
        for (const name of ran) expect(found, `${JSON.stringify(command)} ran ${name}`).toContain(name);
        if (existsSync(join(dir, "x"))) expect(found, JSON.stringify(command)).toContain("touch");
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }
  });
});
