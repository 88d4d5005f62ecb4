import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { obeyedFilesChangedSince } from "./obeyed-files.js";

let root: string;
let workspace: string;
beforeEach(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), "pincer-obeyed-")));
  workspace = join(root, "workspace");
  for (const dir of ["sub/deep", ".git/hooks", ".git/info", "node_modules/x", "notes"]) {
    mkdirSync(join(workspace, dir), { recursive: true });
  }
  for (const file of ["notes/today.md", "sub/deep/data.csv", ".git/HEAD", ".git/index", "sub/tool.py", "outside.mk"]) {
    writeFileSync(join(workspace, file), "x");
  }
  writeFileSync(join(root, "elsewhere"), "x");
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

const changed = (command: string, since: number, workingDir?: string) =>
  obeyedFilesChangedSince(workspace, workingDir, command, since);
const write = (path: string) => writeFileSync(join(workspace, path), "changed");

describe("the files a command obeys, changed since it was always allowed", () => {
  it("nothing changed: nothing to ask about, whatever else the workspace holds", async () => {
    // Allowed a while after the workspace was made (file times within 50 ms of it count as after it).
    const since = Date.now() + 1000;
    write("notes/today.md");
    write("sub/deep/data.csv");
    write(".git/index");
    write(".git/HEAD");
    expect(await changed("git status --short", since)).toEqual([]);
  });

  it("dotfiles, build files and git's config and hooks, in the command's folder and each folder above it", async () => {
    const since = Date.now() - 1;
    for (const file of [".gitconfig", ".npmrc", "Makefile", "package.json", ".git/config", ".git/hooks/pre-commit"]) {
      write(file);
    }
    write("sub/.envrc");
    write("sub/deep/Cargo.toml");
    write(".git/info/attributes");
    expect(await changed("make test", since, "sub/deep")).toEqual([
      ".git/config",
      ".git/hooks",
      ".git/hooks/pre-commit",
      ".git/info/attributes",
      ".gitconfig",
      ".npmrc",
      "Makefile",
      "package.json",
      "sub/.envrc",
      "sub/deep/Cargo.toml",
    ]);
    // Run from the top, the folders below are not read (unless the command names them).
    expect(await changed("make", since)).not.toContain("sub/.envrc");
  });

  it("a .git or dotfile that is a link counts as changed when what it leads to changes", async () => {
    mkdirSync(join(workspace, "elsewhere/.git/hooks"), { recursive: true });
    writeFileSync(join(workspace, "elsewhere/.git/config"), "[core]");
    writeFileSync(join(workspace, "elsewhere/rc"), "x");
    rmSync(join(workspace, ".git"), { recursive: true });
    symlinkSync("elsewhere/.git", join(workspace, ".git"));
    symlinkSync("elsewhere/rc", join(workspace, ".bashrc"));
    // Allowed after the links were made: nothing changed yet.
    const since = Date.now() + 1000;
    expect(await changed("git status", since)).toEqual([]);
    await new Promise((r) => setTimeout(r, 1100));
    writeFileSync(join(workspace, "elsewhere/.git/config"), "[core]\n\tfsmonitor = evil");
    writeFileSync(join(workspace, "elsewhere/rc"), "evil");
    expect(await changed("git status", since)).toEqual([".bashrc", ".git/config"]);
  });

  it("files and folders the command names, options' values too; nothing outside the workspace", async () => {
    const since = Date.now() - 1;
    write("sub/tool.py");
    write("outside.mk");
    write("sub/deep/Makefile");
    writeFileSync(join(root, "elsewhere"), "changed");
    // (.git/hooks was made a moment ago too: set aside here.)
    const named = async (command: string) => (await changed(command, since)).filter((f) => !f.startsWith(".git"));
    expect(await named("python3 'sub/tool.py' && make -f=outside.mk -C sub/deep")).toEqual([
      "outside.mk",
      "sub/deep/Makefile",
      "sub/tool.py",
    ]);
    expect(await named("cat ../elsewhere /etc/passwd")).toEqual([]);
    expect(await changed("ls", since, "../..")).toEqual(["../.."]);
  });
});
