import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { displayPath, type PathScope, resolveInWorkspace } from "./workspace-path.js";

let root: string;
let home: string;
let workspace: string;
let media: string;
let scope: PathScope;

beforeEach(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), "pincer-wspath-")));
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

describe("resolveInWorkspace", () => {
  it("resolves relative paths against the workspace, and no path to the workspace itself", async () => {
    expect(await resolveInWorkspace("notes/a.md", scope, "read")).toBe(join(workspace, "notes", "a.md"));
    expect(await resolveInWorkspace("./notes/../notes/a.md", scope, "read")).toBe(join(workspace, "notes", "a.md"));
    expect(await resolveInWorkspace(undefined, scope, "read")).toBe(workspace);
    expect(await resolveInWorkspace("", scope, "read")).toBe(workspace);
  });

  it("accepts an absolute path inside the workspace", async () => {
    expect(await resolveInWorkspace(join(workspace, "notes"), scope, "write")).toBe(join(workspace, "notes"));
  });

  it("resolves a file that does not exist yet through its existing parent", async () => {
    expect(await resolveInWorkspace("new/deeper/file.txt", scope, "write")).toBe(
      join(workspace, "new/deeper/file.txt"),
    );
  });

  it.each([
    ["../.env", /leads outside the workspace/],
    ["../../outside/secret.txt", /leads outside the workspace/],
    ["/etc/passwd", /leads outside the workspace/],
    ["~/x", /~ is not expanded/],
    ["~", /~ is not expanded/],
  ])("refuses %s", async (input, message) => {
    await expect(resolveInWorkspace(input, scope, "read")).rejects.toThrow(message);
  });

  it("refuses PINCER_HOME's files by absolute path", async () => {
    await expect(resolveInWorkspace(join(home, ".env"), scope, "read")).rejects.toThrow(/outside the workspace/);
  });

  it("refuses symlinks that lead outside, for reading and for writing through them", async () => {
    symlinkSync(join(root, "outside", "secret.txt"), join(workspace, "link.txt"));
    symlinkSync(join(root, "outside"), join(workspace, "outdir"));
    symlinkSync(join(home, ".env"), join(workspace, "env"));
    await expect(resolveInWorkspace("link.txt", scope, "read")).rejects.toThrow(/through a symlink/);
    await expect(resolveInWorkspace("env", scope, "read")).rejects.toThrow(/through a symlink/);
    await expect(resolveInWorkspace("outdir/new.txt", scope, "write")).rejects.toThrow(/through a symlink/);
  });

  it("refuses a dangling symlink, whose target could be created anywhere", async () => {
    symlinkSync(join(root, "outside", "not-yet.txt"), join(workspace, "dangling"));
    await expect(resolveInWorkspace("dangling", scope, "write")).rejects.toThrow(
      /symlink to something that does not exist/,
    );
  });

  it("follows symlinks that stay inside and returns the real target", async () => {
    symlinkSync(join(workspace, "notes"), join(workspace, "n"));
    expect(await resolveInWorkspace("n/a.md", scope, "read")).toBe(join(workspace, "notes", "a.md"));
  });

  it("works when the workspace path itself goes through a symlink", async () => {
    symlinkSync(workspace, join(root, "ws-link"));
    const linked = { ...scope, workspace: join(root, "ws-link") };
    expect(await resolveInWorkspace("notes/a.md", linked, "read")).toBe(join(workspace, "notes", "a.md"));
    expect(await resolveInWorkspace(join(root, "ws-link", "notes"), linked, "read")).toBe(join(workspace, "notes"));
  });

  it("lets read access into the media folder but not write access", async () => {
    expect(await resolveInWorkspace(join(media, "photo.jpg"), scope, "read")).toBe(join(media, "photo.jpg"));
    await expect(resolveInWorkspace(join(media, "photo.jpg"), scope, "write")).rejects.toThrow(
      /read-only media folder/,
    );
  });

  it("keeps PINCER_HOME hidden when it sits inside the workspace", async () => {
    const wide: PathScope = { workspace: root, readRoots: [media], hidden: [home] };
    expect(await resolveInWorkspace("outside/secret.txt", wide, "read")).toBe(join(root, "outside", "secret.txt"));
    await expect(resolveInWorkspace("home/.env", wide, "read")).rejects.toThrow(/pincer's own data folder/);
    await expect(resolveInWorkspace("home/workspace/x", wide, "write")).rejects.toThrow(/pincer's own data folder/);
    // The media folder is still readable, as the read root it is.
    expect(await resolveInWorkspace("home/media/photo.jpg", wide, "read")).toBe(join(media, "photo.jpg"));
  });

  it("says so when a part of the path is a file", async () => {
    await expect(resolveInWorkspace("notes/a.md/x", scope, "write")).rejects.toThrow(/is a file, not a folder/);
  });
});

describe("displayPath", () => {
  it("shows workspace paths relative and others absolute", () => {
    expect(displayPath("/w/a/b.txt", "/w")).toBe("a/b.txt");
    expect(displayPath("/w", "/w")).toBe(".");
    expect(displayPath("/m/p.jpg", "/w")).toBe("/m/p.jpg");
  });
});
