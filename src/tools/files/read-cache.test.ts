import { execFileSync, spawn, spawnSync } from "node:child_process";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { until } from "../../../test/helpers/until.js";
import { packageRoot } from "../../paths.js";
import { ReadCache } from "./read-cache.js";

let root: string;
let workspace: string;
let outside: string;

beforeEach(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), "pincer-readcache-")));
  workspace = join(root, "workspace");
  outside = join(root, "outside");
  mkdirSync(join(workspace, "skills", "one"), { recursive: true });
  mkdirSync(outside);
  writeFileSync(join(outside, "secret.md"), "host secret\n");
  writeFileSync(join(workspace, "AGENTS.md"), "version 1\n");
  writeFileSync(join(workspace, "skills", "one", "SKILL.md"), "---\nname: one\n---\n");
});

afterEach(() => rmSync(root, { recursive: true, force: true }));

/** A cache for which every file has settled at once (as if read a minute after its last change). */
const settledCache = () => new ReadCache({ now: () => Date.now() + 60_000 });

/** Sets a file's times back to what they were, to the nanosecond: the edit then shows only in its ctime. */
function keepTimes(path: string, edit: () => void): void {
  const before = statSync(path, { bigint: true });
  const reference = `${path}.times`;
  execFileSync("touch", ["-r", path, reference]);
  edit();
  execFileSync("touch", ["-r", reference, path]);
  rmSync(reference);
  const after = statSync(path, { bigint: true });
  expect(after.mtimeNs).toBe(before.mtimeNs);
  expect(after.size).toBe(before.size);
}

describe("ReadCache.text", () => {
  it("serves an unchanged file from memory and reads it again once it changed", async () => {
    const cache = settledCache();
    expect(cache.text(workspace, "AGENTS.md", 1000)).toEqual({
      ok: true,
      text: "version 1\n",
      path: join(workspace, "AGENTS.md"),
    });
    expect(cache.text(workspace, "AGENTS.md", 1000)).toMatchObject({ ok: true, text: "version 1\n" });
    expect(cache.stats).toEqual({ hits: 1, misses: 1 });
    writeFileSync(join(workspace, "AGENTS.md"), "version 22\n");
    expect(cache.text(workspace, "AGENTS.md", 1000)).toMatchObject({ ok: true, text: "version 22\n" });
    expect(cache.stats.misses).toBe(2);
  });

  it("sees an edit of the same size with the mtime put back (the ctime tells)", async () => {
    const cache = settledCache();
    const file = join(workspace, "AGENTS.md");
    expect(cache.text(workspace, "AGENTS.md", 1000)).toMatchObject({ text: "version 1\n" });
    keepTimes(file, () => writeFileSync(file, "version 2\n"));
    expect(cache.text(workspace, "AGENTS.md", 1000)).toMatchObject({ text: "version 2\n" });
  });

  it("sees a file replaced by another of the same size and times (a new inode)", async () => {
    const cache = settledCache();
    const file = join(workspace, "AGENTS.md");
    expect(cache.text(workspace, "AGENTS.md", 1000)).toMatchObject({ text: "version 1\n" });
    writeFileSync(join(workspace, "next.md"), "version 3\n");
    execFileSync("touch", ["-r", file, join(workspace, "next.md")]);
    renameSync(join(workspace, "next.md"), file);
    expect(cache.text(workspace, "AGENTS.md", 1000)).toMatchObject({ text: "version 3\n" });
  });

  it("does not remember a file changed within the last moments: a second edit in the same clock tick still shows", async () => {
    // The real clock: the file was written just now, so its times are too fresh to trust.
    const cache = new ReadCache();
    const file = join(workspace, "AGENTS.md");
    writeFileSync(file, "version 4\n");
    expect(cache.text(workspace, "AGENTS.md", 1000)).toMatchObject({ text: "version 4\n" });
    expect(cache.text(workspace, "AGENTS.md", 1000)).toMatchObject({ text: "version 4\n" });
    expect(cache.stats).toEqual({ hits: 0, misses: 2 });
    keepTimes(file, () => writeFileSync(file, "version 5\n"));
    expect(cache.text(workspace, "AGENTS.md", 1000)).toMatchObject({ text: "version 5\n" });
    expect(cache.stats.hits).toBe(0);
  });

  it("refuses a cached file swapped for a symlink, and never returns what the link points to", async () => {
    const cache = settledCache();
    const file = join(workspace, "AGENTS.md");
    expect(cache.text(workspace, "AGENTS.md", 1000)).toMatchObject({ ok: true });
    rmSync(file);
    symlinkSync(join(outside, "secret.md"), file);
    expect(cache.text(workspace, "AGENTS.md", 1000)).toMatchObject({ ok: false, reason: /is a symlink/ });
    // A link to a file inside the workspace is refused just the same (prompt files follow no link).
    rmSync(file);
    writeFileSync(join(workspace, "real.md"), "version 1\n");
    symlinkSync("real.md", file);
    expect(cache.text(workspace, "AGENTS.md", 1000)).toMatchObject({ ok: false, reason: /is a symlink/ });
  });

  it("refuses a cached file whose folder was swapped for a symlink to a folder holding the very same file", async () => {
    const cache = settledCache();
    const rel = join("skills", "one", "SKILL.md");
    expect(cache.text(workspace, rel, 1000)).toMatchObject({ ok: true, text: "---\nname: one\n---\n" });
    // Same inode, unchanged, now reached through a link: the race-free read would refuse it, so must the cache.
    renameSync(join(workspace, "skills", "one"), join(workspace, "skills", "moved"));
    symlinkSync("moved", join(workspace, "skills", "one"));
    expect(cache.text(workspace, rel, 1000)).toMatchObject({ ok: false, reason: /symlink/ });
  });

  it("remembers a missing file only while it is missing, and refuses FIFOs and big files as before", async () => {
    const cache = settledCache();
    expect(cache.text(workspace, "USER.md", 1000)).toMatchObject({ ok: false, reason: /does not exist/ });
    expect(cache.text(workspace, "USER.md", 1000)).toMatchObject({ ok: false, reason: /does not exist/ });
    expect(cache.stats.hits).toBe(1);
    writeFileSync(join(workspace, "USER.md"), "user\n");
    expect(cache.text(workspace, "USER.md", 1000)).toMatchObject({ ok: true, text: "user\n" });
    execFileSync("mkfifo", [join(workspace, "fifo.md")]);
    expect(cache.text(workspace, "fifo.md", 1000)).toMatchObject({ ok: false, reason: /FIFO/ });
    writeFileSync(join(workspace, "big.md"), "x".repeat(2000));
    expect(cache.text(workspace, "big.md", 1000)).toMatchObject({ ok: false, reason: /larger than 1000 bytes/ });
    // A file grown past the cap after it was cached is refused, not served from memory.
    expect(cache.text(workspace, "AGENTS.md", 20)).toMatchObject({ ok: true });
    writeFileSync(join(workspace, "AGENTS.md"), "x".repeat(50));
    expect(cache.text(workspace, "AGENTS.md", 20)).toMatchObject({ ok: false, reason: /larger than 20 bytes/ });
  });
});

describe("ReadCache and a file written through a shared mmap", () => {
  /** Maps AGENTS.md, writes "2" (the page's first write fault sets mtime and ctime), then "3" to the same dirty page. */
  const WRITER = `
import mmap, os, sys, time
folder = sys.argv[1]
f = open(folder + "/AGENTS.md", "r+b")
m = mmap.mmap(f.fileno(), 0)
m[8:9] = b"2"
open(folder + "/first", "w").close()
while not os.path.exists(folder + "/again"): time.sleep(0.01)
m[8:9] = b"3"
open(folder + "/second", "w").close()
while not os.path.exists(folder + "/done"): time.sleep(0.01)
`;

  it("serves a remembered file no longer than maxAgeMs: an edit that left every stamp alone shows then", async () => {
    const cache = new ReadCache({ maxAgeMs: 300 });
    const writer = spawn("python3", ["-c", WRITER, workspace], { stdio: "ignore" });
    try {
      await until(() => existsSync(join(workspace, "first")), "the first write");
      // Once its times have settled, the file is served from memory.
      await until(() => cache.text(workspace, "AGENTS.md", 1000).ok && cache.stats.hits > 0, "a hit");
      expect(cache.text(workspace, "AGENTS.md", 1000)).toMatchObject({ text: "version 2\n" });
      writeFileSync(join(workspace, "again"), "");
      await until(() => existsSync(join(workspace, "second")), "the second write");
      // The second write may leave the stamps as they were (it does on ext4 and tmpfs): only the age limit helps.
      await until(
        () => (cache.text(workspace, "AGENTS.md", 1000) as { text?: string }).text === "version 3\n",
        "the edit to show",
        5000,
      );
    } finally {
      writeFileSync(join(workspace, "done"), "");
      writer.kill();
    }
  });
});

describe("ReadCache.folders", () => {
  it("lists real folders only and sees a folder added, a folder swapped for a link, and a folder created later", async () => {
    const cache = settledCache();
    expect(cache.folders(workspace, "skills")).toEqual(["one"]);
    expect(cache.folders(workspace, "skills")).toEqual(["one"]);
    expect(cache.stats.hits).toBe(1);
    mkdirSync(join(workspace, "skills", "two"));
    expect(cache.folders(workspace, "skills").sort()).toEqual(["one", "two"]);
    symlinkSync(outside, join(workspace, "skills", "three"));
    expect(cache.folders(workspace, "skills").sort()).toEqual(["one", "two"]);
    rmSync(join(workspace, "skills"), { recursive: true });
    symlinkSync(outside, join(workspace, "skills"));
    expect(() => cache.folders(workspace, "skills")).toThrow(/symlink/);
    expect(cache.folders(workspace, "missing")).toEqual([]);
    expect(cache.folders(workspace, "missing")).toEqual([]);
    mkdirSync(join(workspace, "missing", "late"), { recursive: true });
    expect(cache.folders(workspace, "missing")).toEqual(["late"]);
  });
});

/**
 * The sandbox owns the workspace: `chmod 000` on the workspace folder itself (which no stamp
 * covers) makes every lstat below it fail with EACCES — for a daemon that is not root, as in
 * production. Run in a child through the built modules; when the tests run as root, the child
 * becomes nobody once it has loaded them (a clone in a private folder is no place nobody can enter).
 * The turn must go on without the files, as the race-free read alone does.
 */
const CHMOD_WORKSPACE = `
import { chmodSync } from "node:fs";
const dist = process.argv[1];
const [workspace, drop] = process.argv.slice(2);
const { ReadCache } = await import(dist + "/src/tools/files/read-cache.js");
const { listSkills } = await import(dist + "/src/agent/skills.js");
const { buildSystemPrompt } = await import(dist + "/src/agent/context.js");
if (drop === "nobody") { process.setgroups([]); process.setgid(65534); process.setuid(65534); }
const cache = new ReadCache({ now: () => Date.now() + 60_000 });
const warnings = [];
const log = { warn: (o, msg) => warnings.push(msg + ": " + o.reason) };
const prompt = () => {
  const skills = listSkills([{ root: workspace, dir: "skills" }], log, {}, cache);
  return buildSystemPrompt({ workspace, skills, timezone: "UTC", log, cache,
    inbound: { sessionKey: "console:x", isGroup: false } });
};
const results = [];
const run = () => { try { results.push({ ok: true, prompt: prompt() }); } catch (err) { results.push({ ok: false, error: String(err) }); } };
run(); run();
const hitsBefore = cache.stats.hits;
chmodSync(workspace, 0);
run(); run();
chmodSync(workspace, 0o755);
run();
console.log(JSON.stringify({ results, hitsBefore, warnings }));
`;

describe("ReadCache against a workspace made unreadable", () => {
  it("never throws: the prompt goes on without the files, and has them back once the folder is readable", async () => {
    const runAsNobody = process.getuid?.() === 0;
    for (const dir of [root, workspace]) chmodSync(dir, 0o755);
    if (runAsNobody) execFileSync("chown", ["-R", "65534:65534", workspace]);
    const child = spawnSync(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        CHMOD_WORKSPACE,
        join(packageRoot(), "dist"),
        workspace,
        runAsNobody ? "nobody" : "",
      ],
      { encoding: "utf8", timeout: 20_000 },
    );
    expect(child.stderr).toBe("");
    const { results, hitsBefore, warnings } = JSON.parse(child.stdout) as {
      results: { ok: boolean; prompt?: string; error?: string }[];
      hitsBefore: number;
      warnings: string[];
    };
    // The files were served from memory before the chmod: the attack meets the cache, not a cold read.
    expect(hitsBefore).toBeGreaterThan(0);
    expect(results.map((r) => r.error)).toEqual([undefined, undefined, undefined, undefined, undefined]);
    for (const i of [0, 1, 4]) {
      expect(results[i].prompt).toContain("## AGENTS.md\n\nversion 1");
      expect(results[i].prompt).toContain("- one: ");
    }
    for (const i of [2, 3]) {
      expect(results[i].prompt).not.toContain("## AGENTS.md");
      expect(results[i].prompt).toContain("## Runtime");
    }
    expect(warnings.some((w) => /permission denied/i.test(w))).toBe(true);
  });
});
