/**
 * The escape suite: everything a prompt-injected model might try through exec and the file
 * tools, called exactly as the model calls them (registry.execute with JSON arguments), against
 * the real bwrap. The guard's path checks are off here (restrictToWorkspace: false) so each
 * attempt reaches the sandbox itself; the guard gets its own test at the end.
 */

import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import BetterSqlite3 from "better-sqlite3";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { conversationMediaDir } from "../src/bus/types.js";
import { type Config, loadConfig } from "../src/config/config.js";
import { databasePath, mediaDir } from "../src/paths.js";
import { createExecTool } from "../src/tools/exec/exec-tool.js";
import { checkSandbox, INSTALL_BWRAP } from "../src/tools/exec/sandbox-check.js";
import { createFileTools } from "../src/tools/files/index.js";
import { ToolRegistry } from "../src/tools/registry.js";
import { tempHome } from "./helpers/app.js";
import { hasSystemPackage } from "./helpers/system-packages.js";
import { toolContext } from "./helpers/tools.js";
import { until } from "./helpers/until.js";

const bwrap = hasSystemPackage("bwrap", "bubblewrap");

const ENV_SECRET = "env-secret-7f3a9c";
const KEY_SECRET = "sk-live-key-5d2e81";
const DOTENV_SECRET = "dotenv-secret-b41f0e";
const DB_SECRET = "db-secret-c93a7d";
const OUTSIDE_SECRET = "outside-secret-0a8b2f";
/** In the command line of every long-lived test process: unique to this run, so another run's processes never count. */
const MARKER = `pincer-escape-${process.pid}-${Date.now()}`;

let root: string;
let home: string;
let workspace: string;
let outside: string;
let config: Config;
let server: Server;
let serverHits = 0;
let serverUrl: string;
const savedEnv = { PINCER_TEST_SECRET: process.env.PINCER_TEST_SECRET, OPENAI_API_KEY: process.env.OPENAI_API_KEY };

beforeAll(async () => {
  root = realpathSync(tempHome("pincer-escape-"));
  home = join(root, "home");
  workspace = join(home, "workspace");
  outside = join(root, "outside");
  mkdirSync(workspace, { recursive: true });
  mkdirSync(ownMedia(), { recursive: true });
  mkdirSync(outside);
  writeFileSync(join(home, ".env"), `OPENAI_API_KEY=${DOTENV_SECRET}\n`);
  writeFileSync(
    join(home, "config.json"),
    JSON.stringify({ exec: { restrictToWorkspace: false, timeoutSeconds: 20 } }),
  );
  const db = new BetterSqlite3(databasePath(home));
  db.exec("CREATE TABLE secrets (value TEXT)");
  db.prepare("INSERT INTO secrets VALUES (?)").run(DB_SECRET);
  db.close();
  writeFileSync(join(outside, "target.txt"), `${OUTSIDE_SECRET}\n`);
  writeFileSync(join(ownMedia(), "photo.txt"), "a received file\n");

  process.env.PINCER_TEST_SECRET = ENV_SECRET;
  process.env.OPENAI_API_KEY = KEY_SECRET;
  config = loadConfig({ ...process.env, PINCER_HOME: home, PINCER_SANDBOX: "bwrap", PINCER_TIMEZONE: "UTC" });

  server = createServer((_req, res) => {
    serverHits++;
    res.end("reached-the-host-server");
  });
  server.listen(0, "127.0.0.1");
  await new Promise((resolve) => server.once("listening", resolve));
  serverUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  rmSync(root, { recursive: true, force: true });
  for (const [name, value] of Object.entries(savedEnv)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});

function registryFor(adjust: (c: Config) => Config = (c) => c) {
  const effective = adjust(structuredClone(config));
  const registry = new ToolRegistry();
  registry.register(createExecTool({ config: effective }));
  for (const tool of createFileTools(effective)) registry.register(tool);
  return registry;
}

const context = (signal?: AbortSignal) => toolContext("escape", workspace, signal);
/** The received files of the conversation the calls run in (toolContext("escape")). */
const ownMedia = () => conversationMediaDir(mediaDir(home), "console:escape");

function exec(registry: ToolRegistry, command: string, extra: Record<string, unknown> = {}, signal?: AbortSignal) {
  return registry.execute("exec", JSON.stringify({ command, ...extra }), context(signal));
}

/** Host processes whose command line contains `marker`, read from the host's /proc. */
function hostProcesses(marker: string): string[] {
  const found: string[] = [];
  for (const pid of readdirSync("/proc").filter((name) => /^\d+$/.test(name))) {
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ").trim();
      if (cmdline.includes(marker)) found.push(`${pid}: ${cmdline}`);
    } catch {
      // The process ended while we looked.
    }
  }
  return found;
}

function expectNoSecrets(text: string) {
  for (const secret of [ENV_SECRET, KEY_SECRET, DOTENV_SECRET, DB_SECRET, OUTSIDE_SECRET]) {
    expect(text).not.toContain(secret);
  }
}

afterEach(() => {
  // Every test must leave no sandboxed process behind.
  expect(hostProcesses(MARKER)).toEqual([]);
});

describe.skipIf(!bwrap)("the sandbox holds", () => {
  it("cannot read PINCER_HOME: database, config, .env", async () => {
    const registry = registryFor();
    const result = await exec(
      registry,
      `cat ${home}/.env; cat ${home}/config.json; cat ${databasePath(home)}; cat ../.env; ls -la ${home}; grep -r secret ${home} ..`,
    );
    expectNoSecrets(result);
    expect(result).toContain(`cat: ${home}/.env: No such file or directory`);
    expect(result).toContain("cat: ../.env: No such file or directory");
    expect(result).not.toContain("restrictToWorkspace");
  });

  it("cannot see the environment's secrets, its own or pincer's", async () => {
    const registry = registryFor();
    const result = await exec(
      registry,
      "env; echo ---; cat /proc/*/environ /proc/$PPID/environ 2>/dev/null | tr '\\0' '\\n'; ls /proc | grep -c '^[0-9]'",
    );
    expectNoSecrets(result);
    // HOME is the sandbox's own fresh /tmp, not the workspace (issue 36, point 5).
    expect(result).toContain("HOME=/tmp\n");
    expect(result).not.toContain("PINCER_TEST_SECRET");
    expect(result).not.toContain("OPENAI_API_KEY");
    // A private PID namespace: the host's processes (pincer's among them) are not even listed.
    expect(Number(result.trim().split("\n").at(-1))).toBeLessThan(10);
  });

  it("keeps allowlisted variables but never pincer's own credentials", async () => {
    const registry = registryFor((c) => ({
      ...c,
      exec: { ...c.exec, envAllowlist: ["PINCER_TEST_SECRET", "OPENAI_API_KEY"] },
    }));
    const result = await exec(registry, "env");
    expect(result).toContain(`PINCER_TEST_SECRET=${ENV_SECRET}`);
    expect(result).not.toContain(KEY_SECRET);
  });

  it("cannot write outside the workspace", async () => {
    const registry = registryFor();
    const hostTmp = join(tmpdir(), `pincer-escape-${process.pid}.txt`);
    const result = await exec(
      registry,
      [
        `echo pwned > ${outside}/target.txt`,
        `echo pwned > ${home}/.env`,
        `echo pwned > ${hostTmp}`,
        "echo pwned > /usr/pwned",
        "touch /etc/pwned /pwned",
        "echo done",
      ].join("; "),
    );
    expect(result).toContain("done");
    expect(result).toContain("Read-only file system");
    expect(readFileSync(join(outside, "target.txt"), "utf8")).toBe(`${OUTSIDE_SECRET}\n`);
    expect(readFileSync(join(home, ".env"), "utf8")).toBe(`OPENAI_API_KEY=${DOTENV_SECRET}\n`);
    expect(existsSync(hostTmp)).toBe(false);
    expect(existsSync("/usr/pwned")).toBe(false);
    expect(existsSync("/etc/pwned")).toBe(false);
  });

  it("sees its conversation's media folder read-only", async () => {
    const registry = registryFor();
    const result = await exec(registry, `cat ${ownMedia()}/photo.txt; echo x > ${ownMedia()}/new.txt`);
    expect(result).toContain("a received file");
    expect(result).toContain("Read-only file system");
    expect(existsSync(join(ownMedia(), "new.txt"))).toBe(false);
  });

  it("cannot reach a server on the host's 127.0.0.1 (and can, once exec.network is on)", async () => {
    const before = serverHits;
    const blocked = await exec(registryFor(), `curl -sS --max-time 3 ${serverUrl}; wget -q -T 3 -O- ${serverUrl}`);
    expect(blocked).not.toContain("reached-the-host-server");
    expect(blocked).toMatch(/Couldn't connect|Connection refused|Failed to connect/);
    expect(serverHits).toBe(before);

    // The same probe with the network shared proves the probe itself works.
    const open = await exec(
      registryFor((c) => ({ ...c, exec: { ...c.exec, network: true } })),
      `curl -sS --max-time 3 ${serverUrl}`,
    );
    expect(open).toBe("reached-the-host-server");
    expect(serverHits).toBe(before + 1);
  });

  it("cannot follow a symlink out of the workspace, through exec or the file tools", async () => {
    symlinkSync(join(home, ".env"), join(workspace, "env-link"));
    symlinkSync(outside, join(workspace, "outside-link"));
    try {
      const registry = registryFor();
      const viaExec = await exec(registry, "cat env-link; cat outside-link/target.txt; ls outside-link/");
      expectNoSecrets(viaExec);
      expect(viaExec).toContain("No such file or directory");
      const ctx = context();
      const viaRead = await registry.execute("read_file", JSON.stringify({ path: "env-link" }), ctx);
      const viaGrep = await registry.execute("grep", JSON.stringify({ pattern: "secret", path: "outside-link" }), ctx);
      const viaWrite = await registry.execute(
        "write_file",
        JSON.stringify({ path: "outside-link/target.txt", content: "pwned" }),
        ctx,
      );
      for (const result of [viaRead, viaGrep, viaWrite]) {
        expect(result).toMatch(/^Error: .*leads outside the workspace through a symlink/);
        expectNoSecrets(result);
      }
      expect(readFileSync(join(outside, "target.txt"), "utf8")).toBe(`${OUTSIDE_SECRET}\n`);
    } finally {
      rmSync(join(workspace, "env-link"));
      rmSync(join(workspace, "outside-link"));
    }
  });

  it("leaves no background process behind after the call", async () => {
    const registry = registryFor();
    const result = await exec(
      registry,
      [
        `sh -c 'sleep 41; : ${MARKER}-a' &`,
        `nohup sh -c 'sleep 2; echo late > late.txt; : ${MARKER}-b' >/dev/null 2>&1 &`,
        `setsid sh -c 'sleep 2; echo late > late2.txt; : ${MARKER}-c' &`,
        "echo started",
      ].join("\n"),
    );
    expect(result).toBe("started");
    // Gone, they can write nothing later; an escaped one is still there (sleep 41), or wrote its file on its way out.
    await until(() => hostProcesses(MARKER).length === 0, "the call's processes to be gone");
    expect(hostProcesses(`${MARKER}-a`)).toEqual([]);
    expect(existsSync(join(workspace, "late.txt"))).toBe(false);
    expect(existsSync(join(workspace, "late2.txt"))).toBe(false);
  });

  it("cannot outlive the timeout, even ignoring SIGTERM", async () => {
    const registry = registryFor();
    const started = Date.now();
    const result = await exec(registry, `trap '' TERM INT; echo begun; sh -c 'sleep 44; : ${MARKER}-d'`, {
      timeout: 1,
    });
    expect(result).toBe("begun\nTimed out after 1 s: the command and every process it started were killed.");
    // Ordering, not speed: the call ended long before the command's own 44 s.
    expect(Date.now() - started).toBeLessThan(20_000);
    await until(() => hostProcesses(`${MARKER}-d`).length === 0, "the timed-out command gone", 5000);
  });

  it("caps the timeout the model asks for at exec.maxTimeoutSeconds", async () => {
    const registry = registryFor((c) => ({ ...c, exec: { ...c.exec, maxTimeoutSeconds: 1 } }));
    expect(await exec(registry, "sleep 43", { timeout: 3600 })).toContain("Timed out after 1 s");
  });

  it("is killed with its whole sandbox on /stop", async () => {
    const registry = registryFor();
    const stop = new AbortController();
    const pending = exec(registry, `sh -c 'sleep 45; : ${MARKER}-e'`, {}, stop.signal);
    await until(() => hostProcesses(`${MARKER}-e`).length > 0, "the command running in its sandbox");
    stop.abort();
    expect(await pending).toBe("Error: exec was cancelled.");
    await until(() => hostProcesses(`${MARKER}-e`).length === 0, "the cancelled command gone", 5000);
  });

  it("cannot flood the output", async () => {
    const registry = registryFor();
    const flood = await exec(registry, "yes pincer-flood");
    expect(flood.length).toBeLessThan(config.exec.maxOutputChars + 400);
    expect(flood).toMatch(/… \(truncated, \d+ more chars\)/);
    expect(flood).toContain("Stopped: the output passed");
    expect(flood).not.toContain("Timed out");

    const counted = await exec(registry, "seq 1 3000");
    expect(counted).toMatch(/^1\n2\n3\n/);
    expect(counted).toMatch(/… \(truncated, \d+ more chars\)$/);

    const binary = await exec(registry, "head -c 20000 /dev/urandom");
    expect(binary).toBe("(binary output, 20000 bytes, not shown; pipe it through `xxd | head` or `base64` to see it)");
  });
});

describe.skipIf(!bwrap)("the sandbox still works", () => {
  it("runs a normal command, with stderr and exit code", async () => {
    const registry = registryFor();
    expect(await exec(registry, "echo hello && uname -s")).toBe("hello\nLinux");
    expect(await exec(registry, "echo out; echo oops >&2; exit 3")).toBe("out\nSTDERR:\noops\nExit code: 3");
    expect(await exec(registry, "true")).toBe("(no output)");
  });

  it("writes inside the workspace, in a working_dir", async () => {
    mkdirSync(join(workspace, "proj"), { recursive: true });
    const registry = registryFor();
    expect(await exec(registry, "echo data > made.txt && pwd && cat made.txt", { working_dir: "proj" })).toBe(
      `${workspace}/proj\ndata`,
    );
    expect(readFileSync(join(workspace, "proj", "made.txt"), "utf8")).toBe("data\n");
  });

  it("runs a pipeline", async () => {
    const registry = registryFor();
    expect(await exec(registry, "printf 'b\\na\\nc\\n' | sort | head -n 2 | tr a-z A-Z")).toBe("A\nB");
  });

  it("refuses a working_dir outside the workspace", async () => {
    const registry = registryFor();
    expect(await exec(registry, "ls", { working_dir: ".." })).toMatch(/^Error: "\.\." leads outside the workspace/);
    expect(await exec(registry, "ls", { working_dir: outside })).toMatch(/leads outside the workspace/);
  });
});

describe("the guard and the sandbox setting", () => {
  it.skipIf(!bwrap)(
    "blocks path escapes and destructive commands before they run when restrictToWorkspace is on",
    async () => {
      const registry = registryFor((c) => ({ ...c, exec: { ...c.exec, restrictToWorkspace: true } }));
      expect(await exec(registry, `cat ${home}/.env`)).toBe(
        `Error: the command was blocked by the safety guard: ${home}/.env is pincer's own data folder, which commands never touch.`,
      );
      expect(await exec(registry, "cat /etc/hostname")).toContain("/etc/hostname is outside the workspace");
      expect(await exec(registry, "rm -rf notes")).toMatch(
        /^Error: the command was blocked by the safety guard: recursive rm/,
      );
      expect(await exec(registry, "echo ok > guarded.txt && cat guarded.txt")).toBe("ok");
    },
  );

  it.skipIf(!bwrap)("reports that bwrap works on this host", async () => {
    const status = await checkSandbox(config);
    expect(status).toMatchObject({ ok: true, sandboxed: true, bwrap: "/usr/bin/bwrap" });
    expect(status.detail).toMatch(/^bubblewrap \d+\.\d+.* works: commands run sandboxed, without network access\.$/);
  });

  it("refuses with install instructions on a host without bwrap", async () => {
    const empty = tempHome("pincer-no-bwrap-");
    vi.stubEnv("PATH", empty);
    try {
      const registry = registryFor();
      const result = await exec(registry, "echo should-not-run");
      expect(result).toBe(`Error: ${INSTALL_BWRAP}`);
      expect(result).toContain("apt install bubblewrap");
    } finally {
      vi.unstubAllEnvs();
      rmSync(empty, { recursive: true, force: true });
    }
  });

  it("runs without bwrap only with PINCER_SANDBOX=none, still with a clean environment", async () => {
    const unsandboxed = registryFor((c) => ({ ...c, sandbox: "none" }));
    const status = await checkSandbox({ ...config, sandbox: "none" });
    expect(status).toMatchObject({ ok: true, sandboxed: false });
    expect(status.detail).toContain("PINCER_SANDBOX=none");
    const result = await exec(unsandboxed, "echo secret=[$PINCER_TEST_SECRET] key=[$OPENAI_API_KEY]; pwd");
    expect(result).toBe(`secret=[] key=[]\n${workspace}`);
  });
});
