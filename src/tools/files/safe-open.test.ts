import { execFileSync } from "node:child_process";
import {
  closeSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { readTextBeneath } from "./safe-io.js";
import { type OpenRequest, openInScope, type PathScope } from "./safe-open.js";
import { displayPath } from "./workspace-path.js";

let root: string;
let home: string;
let workspace: string;
let media: string;
let scope: PathScope;

beforeEach(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), "pincer-safeopen-")));
  home = join(root, "home");
  workspace = join(home, "workspace");
  media = join(home, "media");
  mkdirSync(join(workspace, "notes"), { recursive: true });
  mkdirSync(media, { recursive: true });
  writeFileSync(join(home, ".env"), "OPENAI_API_KEY=sk-secret\n");
  writeFileSync(join(workspace, "notes", "a.md"), "a\n");
  writeFileSync(join(media, "photo.jpg"), "jpg");
  mkdirSync(join(root, "outside"));
  writeFileSync(join(root, "outside", "secret.txt"), "secret");
  scope = { workspace, readRoots: [media], hidden: [home] };
});

afterEach(() => rmSync(root, { recursive: true, force: true }));

const READ: OpenRequest = { access: "read", want: "any" };

/** The path opened, with the descriptor closed again. */
function opens(input: string | undefined, request: OpenRequest = READ, s: PathScope = scope): string {
  const opened = openInScope(input, s, request);
  closeSync(opened.fd);
  return opened.path;
}

describe("openInScope", () => {
  it("opens relative paths below the workspace, and no path as the workspace itself", () => {
    expect(opens("notes/a.md")).toBe(join(workspace, "notes", "a.md"));
    expect(opens("./notes/../notes/a.md")).toBe(join(workspace, "notes", "a.md"));
    expect(opens(undefined)).toBe(workspace);
    expect(opens("")).toBe(workspace);
  });

  it("accepts an absolute path inside the workspace", () => {
    expect(opens(join(workspace, "notes"), { access: "write", want: "dir" })).toBe(join(workspace, "notes"));
  });

  it("creates a file and its missing folders only when asked to", () => {
    expect(() => opens("new/deeper/file.txt", { access: "write", want: "file" })).toThrow(/does not exist/);
    const opened = openInScope("new/deeper/file.txt", scope, { access: "write", want: "file", create: true });
    closeSync(opened.fd);
    expect(opened).toMatchObject({ path: join(workspace, "new/deeper/file.txt"), created: true });
  });

  it.each([
    ["../.env", /leads outside the workspace/],
    ["../../outside/secret.txt", /leads outside the workspace/],
    ["/etc/passwd", /leads outside the workspace/],
    ["~/x", /~ is not expanded/],
    ["~", /~ is not expanded/],
  ])("refuses %s", (input, message) => {
    expect(() => opens(input)).toThrow(message);
  });

  it("refuses PINCER_HOME's files by absolute path", () => {
    expect(() => opens(join(home, ".env"))).toThrow(/outside the workspace/);
  });

  it("refuses symlinks that lead outside, for reading and for writing through them", () => {
    symlinkSync(join(root, "outside", "secret.txt"), join(workspace, "link.txt"));
    symlinkSync(join(root, "outside"), join(workspace, "outdir"));
    symlinkSync(join(home, ".env"), join(workspace, "env"));
    symlinkSync("../../outside/secret.txt", join(workspace, "notes", "rel-link"));
    expect(() => opens("link.txt")).toThrow(/through a symlink/);
    expect(() => opens("env")).toThrow(/through a symlink/);
    expect(() => opens("notes/rel-link")).toThrow(/through a symlink/);
    expect(() => opens("outdir/new.txt", { access: "write", want: "file", create: true })).toThrow(/through a symlink/);
    expect(() => opens("outdir/secret.txt", { access: "write", want: "file" })).toThrow(/through a symlink/);
    expect(readFileSync(join(root, "outside", "secret.txt"), "utf8")).toBe("secret");
  });

  it("refuses a dangling symlink that points outside, so nothing is created there", () => {
    symlinkSync(join(root, "outside", "not-yet.txt"), join(workspace, "dangling"));
    expect(() => opens("dangling", { access: "write", want: "file", create: true })).toThrow(/through a symlink/);
  });

  it("follows symlinks that stay inside and reports the real target", () => {
    symlinkSync(join(workspace, "notes"), join(workspace, "n"));
    symlinkSync("notes/a.md", join(workspace, "rel.md"));
    expect(opens("n/a.md")).toBe(join(workspace, "notes", "a.md"));
    expect(opens("rel.md")).toBe(join(workspace, "notes", "a.md"));
  });

  it("refuses even inside links when asked (prompt files), and link loops", () => {
    symlinkSync("notes/a.md", join(workspace, "rel.md"));
    symlinkSync("loop2", join(workspace, "loop1"));
    symlinkSync("loop1", join(workspace, "loop2"));
    expect(() => opens("rel.md", { access: "read", want: "file", noLinks: true })).toThrow(/is a symlink/);
    expect(() => opens("loop1")).toThrow(/too many levels of symlinks/);
  });

  it("works when the workspace path itself goes through a symlink", () => {
    symlinkSync(workspace, join(root, "ws-link"));
    const linked = { ...scope, workspace: join(root, "ws-link") };
    expect(opens("notes/a.md", READ, linked)).toBe(join(workspace, "notes", "a.md"));
    expect(opens(join(root, "ws-link", "notes"), READ, linked)).toBe(join(workspace, "notes"));
  });

  it("lets read access into the media folder but not write access", () => {
    expect(opens(join(media, "photo.jpg"))).toBe(join(media, "photo.jpg"));
    expect(() => opens(join(media, "photo.jpg"), { access: "write", want: "file" })).toThrow(/read-only folder/);
  });

  it("keeps PINCER_HOME hidden when it sits inside the workspace", () => {
    const wide: PathScope = { workspace: root, readRoots: [media], hidden: [home] };
    expect(opens("outside/secret.txt", READ, wide)).toBe(join(root, "outside", "secret.txt"));
    expect(() => opens("home/.env", READ, wide)).toThrow(/pincer's own data folder/);
    expect(() => opens("home", READ, wide)).toThrow(/pincer's own data folder/);
    expect(() => opens("home/workspace/x", { access: "write", want: "file", create: true }, wide)).toThrow(
      /pincer's own data folder/,
    );
    // A link inside the wide workspace into PINCER_HOME is no way around it.
    symlinkSync("home", join(root, "h"));
    expect(() => opens("h/.env", READ, wide)).toThrow(/pincer's own data folder/);
    // The media folder is still readable, as the read root it is.
    expect(opens("home/media/photo.jpg", READ, wide)).toBe(join(media, "photo.jpg"));
  });

  it("says so when a part of the path is a file", () => {
    expect(() => opens("notes/a.md/x", { access: "write", want: "file", create: true })).toThrow(
      /is a file, not a folder/,
    );
  });

  it("refuses a FIFO at once, for reading and for writing, without blocking", () => {
    execFileSync("mkfifo", [join(workspace, "pipe")]);
    const started = Date.now();
    expect(() => opens("pipe")).toThrow(/is a named pipe \(FIFO\); only regular files/);
    expect(() => opens("pipe", { access: "write", want: "file", create: true })).toThrow(/named pipe/);
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it("refuses a socket", async () => {
    const path = join(workspace, "sock");
    const server: Server = createServer();
    await new Promise<void>((resolve) => server.listen(path, resolve));
    try {
      expect(() => opens("sock")).toThrow(/is a socket/);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("creates exclusively: an existing file or any link, dangling or not, is left alone", () => {
    symlinkSync(join(root, "outside", "nope.json"), join(workspace, "dangling"));
    const exclusive: OpenRequest = { access: "write", want: "file", create: true, exclusive: true };
    expect(() => opens("dangling", exclusive)).toThrow(/is a symlink; it is left alone/);
    expect(() => opens("notes/a.md", exclusive)).toThrow(/already exists/);
    expect(opens("fresh.md", exclusive)).toBe(join(workspace, "fresh.md"));
  });
});

describe("readTextBeneath", () => {
  it("reads a small regular file and refuses links, FIFOs and big files with a reason", () => {
    writeFileSync(join(workspace, "big.md"), "x".repeat(2000));
    symlinkSync("notes/a.md", join(workspace, "inside-link.md"));
    execFileSync("mkfifo", [join(workspace, "fifo.md")]);
    expect(readTextBeneath(workspace, "notes/a.md", 1000)).toMatchObject({
      ok: true,
      text: "a\n",
      path: join(workspace, "notes", "a.md"),
    });
    expect(readTextBeneath(workspace, "big.md", 1000)).toEqual({ ok: false, reason: "larger than 1000 bytes (2000)" });
    expect(readTextBeneath(workspace, "inside-link.md", 1000)).toMatchObject({ ok: false, reason: /symlink/ });
    expect(readTextBeneath(workspace, "fifo.md", 1000)).toMatchObject({ ok: false, reason: /FIFO/ });
    expect(readTextBeneath(workspace, "missing.md", 1000)).toMatchObject({ ok: false, reason: /does not exist/ });
  });
});

describe("displayPath", () => {
  it("shows workspace paths relative and others absolute", () => {
    expect(displayPath("/w/a/b.txt", "/w")).toBe("a/b.txt");
    expect(displayPath("/w", "/w")).toBe(".");
    expect(displayPath("/m/p.jpg", "/w")).toBe("/m/p.jpg");
  });
});

describe("openInScope limits", () => {
  it("refuses a path more than 256 folders deep instead of holding a descriptor for each", () => {
    const deep = Array.from({ length: 300 }, () => "d").join("/");
    mkdirSync(join(workspace, deep), { recursive: true });
    expect(() => opens(`${deep}/f.txt`, { access: "write", want: "file", create: true })).toThrow(
      /more than 256 folders deep/,
    );
    expect(opens(Array.from({ length: 200 }, () => "d").join("/"))).toBe(
      join(workspace, ...Array.from({ length: 200 }, () => "d")),
    );
  });
});
