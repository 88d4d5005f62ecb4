import {
  linkSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { toolContext } from "../../../test/helpers/tools.js";
import { ToolRegistry } from "../registry.js";
import type { ToolContext } from "../tool.js";
import { createFileTools } from "./index.js";

let root: string;
let home: string;
let workspace: string;
let registry: ToolRegistry;
let ctx: ToolContext;

beforeEach(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), "pincer-files-")));
  home = join(root, "home");
  workspace = join(home, "workspace");
  mkdirSync(join(workspace, "notes", "deep"), { recursive: true });
  mkdirSync(join(home, "media", "console_test"), { recursive: true });
  mkdirSync(join(home, "media", "telegram_77"), { recursive: true });
  writeFileSync(join(home, ".env"), "OPENAI_API_KEY=sk-secret-env\n");
  writeFileSync(join(home, "media", "console_test", "doc.txt"), "a received document\n");
  writeFileSync(join(home, "media", "telegram_77", "theirs.txt"), "another chat's document\n");
  writeFileSync(join(root, "outside.txt"), "outside secret\n");
  writeFileSync(join(workspace, "notes", "todo.md"), "# Todo\n- buy milk\n- call Bob\n");
  writeFileSync(join(workspace, "notes", "deep", "idea.md"), "An idea about milk.\n");
  writeFileSync(join(workspace, "script.ts"), "const x = 1;\nconsole.log(x);\n");
  registry = new ToolRegistry();
  for (const tool of createFileTools({ home })) registry.register(tool);
  ctx = toolContext("test", workspace);
});

afterEach(() => rmSync(root, { recursive: true, force: true }));

const call = (name: string, args: Record<string, unknown>) => registry.execute(name, JSON.stringify(args), ctx);

describe("flags and names", () => {
  it("registers the documented names (docs/tools.md) with their read-only flags", () => {
    expect(registry.names.sort()).toEqual(["edit_file", "glob", "grep", "list_dir", "read_file", "write_file"]);
    for (const name of ["read_file", "list_dir", "grep", "glob"]) expect(registry.isReadOnly(name)).toBe(true);
    for (const name of ["write_file", "edit_file"]) expect(registry.isReadOnly(name)).toBe(false);
  });
});

describe("read_file", () => {
  it("shows numbered lines", async () => {
    expect(await call("read_file", { path: "notes/todo.md" })).toBe(
      "     1\t# Todo\n     2\t- buy milk\n     3\t- call Bob",
    );
  });

  it("pages with offset and limit and says how to continue", async () => {
    const lines = Array.from({ length: 50 }, (_, i) => `line ${i + 1}`).join("\n");
    writeFileSync(join(workspace, "long.txt"), lines);
    expect(await call("read_file", { path: "long.txt", offset: 10, limit: 2 })).toBe(
      "    10\tline 10\n    11\tline 11\n(showing lines 10–11 of 50; continue with offset=12)",
    );
    expect(await call("read_file", { path: "long.txt", offset: 60 })).toBe(
      "Error: offset 60 is past the end: the file has 50 lines.",
    );
  });

  it("refuses binaries politely, naming the format", async () => {
    writeFileSync(
      join(workspace, "pic.png"),
      Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0]),
    );
    expect(await call("read_file", { path: "pic.png" })).toMatch(
      /^Error: "pic.png" is a binary file \(PNG image, 12 bytes\)/,
    );
  });

  it("reads this conversation's received files by absolute path, never another conversation's", async () => {
    expect(await call("read_file", { path: join(home, "media", "console_test", "doc.txt") })).toBe(
      "     1\ta received document",
    );
    expect(await call("read_file", { path: join(home, "media", "telegram_77", "theirs.txt") })).toMatch(/^Error: /);
    expect(await call("list_dir", { path: join(home, "media") })).toMatch(/^Error: /);
  });

  it("keeps the owner's MEMORY.md from a chat that may not see it, under any name", async () => {
    writeFileSync(join(workspace, "MEMORY.md"), "- the owner's bank PIN hint: blue notebook\n");
    symlinkSync("MEMORY.md", join(workspace, "alias.md"));
    linkSync(join(workspace, "MEMORY.md"), join(workspace, "notes", "hard.md"));
    expect(await call("read_file", { path: "MEMORY.md" })).toContain("blue notebook");
    ctx = { ...ctx, seesOwnerMemory: false };
    for (const path of ["MEMORY.md", "alias.md", "notes/hard.md", join(workspace, "MEMORY.md")]) {
      expect(await call("read_file", { path })).toBe(
        `Error: "${path}" is the owner's private memory, which this chat may not read.`,
      );
    }
    expect(await call("edit_file", { path: "MEMORY.md", old_text: "blue", new_text: "red" })).toMatch(/^Error: /);
    expect(await call("write_file", { path: "alias.md", content: "mine now" })).toMatch(/^Error: /);
    expect(readFileSync(join(workspace, "MEMORY.md"), "utf8")).toContain("blue notebook");
    expect(await call("grep", { pattern: "notebook" })).toMatch(/^No matches/);
    expect(await call("grep", { pattern: "notebook", path: "notes/hard.md" })).toMatch(/^Error: /);
    expect(await call("grep", { pattern: "milk" })).toContain("notes/todo.md");
  });

  it.each([
    ["../.env", "leads outside the workspace"],
    ["../../outside.txt", "leads outside the workspace"],
    ["/etc/hostname", "leads outside the workspace"],
    ["missing.txt", '"missing.txt" does not exist'],
    ["notes", "is a folder"],
  ])("refuses %s", async (path, message) => {
    const result = await call("read_file", { path });
    expect(result.startsWith("Error: ")).toBe(true);
    expect(result).toContain(message);
    expect(result).not.toContain("sk-secret");
  });

  it("refuses a symlink that leads out of the workspace", async () => {
    symlinkSync(join(home, ".env"), join(workspace, "env-link"));
    const result = await call("read_file", { path: "env-link" });
    expect(result).toMatch(/^Error: "env-link" leads outside the workspace through a symlink/);
    expect(result).not.toContain("sk-secret");
  });
});

describe("write_file", () => {
  it("creates files and folders inside the workspace and overwrites on request", async () => {
    expect(await call("write_file", { path: "out/new.txt", content: "héllo\n" })).toBe(
      "Created out/new.txt (7 bytes).",
    );
    expect(readFileSync(join(workspace, "out", "new.txt"), "utf8")).toBe("héllo\n");
    expect(await call("write_file", { path: "out/new.txt", content: "bye" })).toBe("Overwrote out/new.txt (3 bytes).");
  });

  it("accepts an absolute path inside the workspace", async () => {
    await call("write_file", { path: join(workspace, "abs.txt"), content: "x" });
    expect(readFileSync(join(workspace, "abs.txt"), "utf8")).toBe("x");
  });

  it("refuses to write outside, into media, or through a symlinked folder", async () => {
    symlinkSync(root, join(workspace, "escape"));
    expect(await call("write_file", { path: "../evil.txt", content: "x" })).toContain("leads outside the workspace");
    expect(await call("write_file", { path: join(home, "media", "console_test", "x.txt"), content: "x" })).toContain(
      "read-only folder",
    );
    expect(await call("write_file", { path: "escape/evil.txt", content: "x" })).toContain("through a symlink");
    expect(await call("write_file", { path: "escape/outside.txt", content: "x" })).toContain("through a symlink");
    expect(readFileSync(join(root, "outside.txt"), "utf8")).toBe("outside secret\n");
  });

  it("checks arguments against the schema", async () => {
    expect(await call("write_file", { path: "a.txt" })).toMatch(/^Error: invalid arguments for write_file/);
  });
});

describe("edit_file", () => {
  it("replaces text that occurs exactly once", async () => {
    expect(await call("edit_file", { path: "notes/todo.md", old_text: "- call Bob", new_text: "- call Alice" })).toBe(
      "Edited notes/todo.md: replaced 1 occurrence at line 3.",
    );
    expect(readFileSync(join(workspace, "notes", "todo.md"), "utf8")).toBe("# Todo\n- buy milk\n- call Alice\n");
  });

  it("keeps $ sequences in new_text literal", async () => {
    await call("edit_file", { path: "script.ts", old_text: "const x = 1;", new_text: "const x = '$&$1';" });
    expect(readFileSync(join(workspace, "script.ts"), "utf8")).toContain("const x = '$&$1';");
  });

  it("refuses an ambiguous match unless replace_all is set", async () => {
    writeFileSync(join(workspace, "dup.txt"), "a\nb\na\n");
    expect(await call("edit_file", { path: "dup.txt", old_text: "a", new_text: "c" })).toBe(
      "Error: old_text occurs 2 times in dup.txt (lines 1, 3); include more of the surrounding text so it matches once, or set replace_all to true.",
    );
    expect(await call("edit_file", { path: "dup.txt", old_text: "a", new_text: "c", replace_all: true })).toBe(
      "Edited dup.txt: replaced 2 occurrences (lines 1, 3).",
    );
    expect(readFileSync(join(workspace, "dup.txt"), "utf8")).toBe("c\nb\nc\n");
  });

  it("shows the nearest match when old_text is not found", async () => {
    const result = await call("edit_file", { path: "script.ts", old_text: "console.log(y);", new_text: "" });
    expect(result).toBe(
      "Error: old_text was not found in script.ts. The closest text is at line 2 (1 characters differ):\nconsole.log(x);",
    );
    expect(readFileSync(join(workspace, "script.ts"), "utf8")).toBe("const x = 1;\nconsole.log(x);\n");
  });

  it("says when only whitespace differs", async () => {
    const result = await call("edit_file", { path: "notes/todo.md", old_text: "-  buy milk", new_text: "x" });
    expect(result).toContain("matches if spaces and line breaks are ignored");
  });

  it("refuses files outside the workspace", async () => {
    expect(await call("edit_file", { path: "../.env", old_text: "sk", new_text: "x" })).toContain(
      "outside the workspace",
    );
    expect(readFileSync(join(home, ".env"), "utf8")).toContain("sk-secret-env");
  });
});

describe("list_dir", () => {
  it("lists folders with a slash, files with sizes and symlinks with targets", async () => {
    symlinkSync("notes/todo.md", join(workspace, "todo-link"));
    expect(await call("list_dir", {})).toBe(".:\nnotes/\nscript.ts  (29 B)\ntodo-link -> notes/todo.md");
    expect(await call("list_dir", { path: "notes" })).toBe("notes:\ndeep/\ntodo.md  (29 B)");
  });

  it("refuses folders outside", async () => {
    expect(await call("list_dir", { path: ".." })).toContain("leads outside the workspace");
  });
});

describe("grep", () => {
  it("finds matches with path and line, across folders", async () => {
    expect(await call("grep", { pattern: "milk" })).toBe(
      "notes/deep/idea.md:1: An idea about milk.\nnotes/todo.md:2: - buy milk",
    );
  });

  it("filters by glob, searches one file, and supports (?i)", async () => {
    expect(await call("grep", { pattern: "x", glob: "*.ts" })).toBe(
      "script.ts:1: const x = 1;\nscript.ts:2: console.log(x);",
    );
    expect(await call("grep", { pattern: "(?i)BOB", path: "notes/todo.md" })).toBe("notes/todo.md:3: - call Bob");
  });

  it("caps the results and says so", async () => {
    writeFileSync(join(workspace, "many.txt"), "hit\n".repeat(500));
    const result = await call("grep", { pattern: "hit", path: "many.txt" });
    expect(result.split("\n")).toHaveLength(201);
    expect(result).toMatch(/\(stopped at 200 matches; narrow the pattern, path or glob\)$/);
  });

  it("does not follow symlinks out of the workspace", async () => {
    symlinkSync(join(home, ".env"), join(workspace, "env-link"));
    symlinkSync(home, join(workspace, "home-link"));
    // Only the three real files are searched; the links are neither followed nor read.
    expect(await call("grep", { pattern: "sk-secret" })).toBe("No matches for /sk-secret/ in 3 file(s).");
    expect(await call("grep", { pattern: "sk-secret", path: "env-link" })).toContain("leads outside the workspace");
    expect(await call("grep", { pattern: "sk-secret", path: "home-link" })).toContain("leads outside the workspace");
    expect(await call("glob", { pattern: "**/.env" })).toBe("No files match **/.env.");
  });

  it("reports an invalid pattern", async () => {
    expect(await call("grep", { pattern: "(" })).toMatch(/^Error: the pattern is not a valid regular expression/);
  });
});

describe("glob", () => {
  it("finds files by pattern at any depth for bare names", async () => {
    expect(await call("glob", { pattern: "*.md" })).toBe("notes/deep/idea.md\nnotes/todo.md");
    expect(await call("glob", { pattern: "notes/*.md" })).toBe("notes/todo.md");
    expect(await call("glob", { pattern: "*.md", path: "notes/deep" })).toBe("notes/deep/idea.md");
    expect(await call("glob", { pattern: "*.zip" })).toBe("No files match *.zip.");
  });

  it("refuses patterns that climb out", async () => {
    expect(await call("glob", { pattern: "../*" })).toContain("must stay inside the folder");
    expect(await call("glob", { pattern: "/etc/*" })).toContain("must stay inside the folder");
  });
});
