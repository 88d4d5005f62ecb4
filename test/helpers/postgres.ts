import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { freePort } from "./net.js";
import { hasSystemPackage } from "./system-packages.js";
import { until } from "./until.js";

/**
 * A real PostgreSQL server for one test file, on 127.0.0.1, in a temporary folder.
 *
 *   const havePostgres = hasPostgres();
 *   describe.skipIf(!havePostgres)("…", () => {
 *     let server: TestPostgres;
 *     beforeAll(async () => { server = await startPostgres(); });
 *     afterAll(() => server?.stop());
 *     it("…", async () => { const url = await server.newDatabase(); … });
 *   });
 */
export interface TestPostgres {
  /** The server's own `postgres` database; prefer newDatabase() so tests never share state. */
  readonly url: string;
  readonly port: number;
  /** The temporary folder holding the data directory. */
  readonly dir: string;
  /** A fresh, empty database on this server, as a `postgres://` URL. */
  newDatabase(): Promise<string>;
  /** Takes the server down (fast shutdown: clients are cut off), keeping its data and port. */
  down(): Promise<void>;
  /** Brings a downed server back on the same port with the same data. */
  up(): Promise<void>;
  /** down(), then up(). */
  restart(): Promise<void>;
  /**
   * Freezes the server and its sessions (SIGSTOP): connections stay open and nothing answers, as
   * when the network pauses; resume() lets them answer again.
   */
  pause(): void;
  resume(): void;
  /** Stops the server for good and deletes its folder; safe to call twice (call it in afterAll). */
  stop(): Promise<void>;
  /** The server's log, for a failing test's message. */
  log(): string;
}

/** Debian installs the server outside PATH, under /usr/lib/postgresql/<major>/bin. */
export function postgresBinDir(): string | undefined {
  const root = "/usr/lib/postgresql";
  const majors = existsSync(root)
    ? readdirSync(root)
        .filter((name) => /^\d+$/.test(name) && existsSync(join(root, name, "bin", "postgres")))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (majors[0]) return join(root, majors[0], "bin");
  try {
    const pgConfigBin = execFileSync("pg_config", ["--bindir"], { encoding: "utf8" }).trim();
    return existsSync(join(pgConfigBin, "postgres")) ? pgConfigBin : undefined;
  } catch {
    return undefined;
  }
}

/** Whether this machine can run a test PostgreSQL: skips loudly without it, throws under CI=true. */
export function hasPostgres(): boolean {
  const dir = postgresBinDir();
  return hasSystemPackage("postgres", "postgresql", dir ?? "");
}

/**
 * PostgreSQL refuses to run as root. As root, every server command runs as the `postgres` user
 * (which Debian's package creates), in a folder handed to that user; otherwise as ourselves.
 */
function serverUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string) => Number(execFileSync("id", [flag, "postgres"], { encoding: "utf8" }).trim());
  return { uid: id("-u"), gid: id("-g") };
}

/**
 * The command line that runs `binary` as the server's user. `--pdeathsig INT` makes the kernel
 * stop the server (fast shutdown) when the test process dies, however it dies, so no server is
 * ever left running behind a crashed or killed test run.
 */
function asServerUser(user: { uid: number; gid: number } | undefined, binary: string, args: string[]) {
  const drop = user ? [`--reuid=${user.uid}`, `--regid=${user.gid}`, "--init-groups"] : [];
  return { command: "setpriv", args: [...drop, "--pdeathsig", "INT", "--", binary, ...args] };
}

export async function startPostgres(): Promise<TestPostgres> {
  const bin = postgresBinDir();
  if (!bin) throw new Error("PostgreSQL is not installed (Debian package postgresql); check hasPostgres() first");
  const user = serverUser();
  const dir = mkdtempSync(join(tmpdir(), "pincer-pg-"));
  if (user) chownSync(dir, user.uid, user.gid);
  const data = join(dir, "data");
  const run = (binary: string, args: string[]) => {
    const { command, args: full } = asServerUser(user, join(bin, binary), args);
    return execFileSync(command, full, { cwd: dir, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  };
  run("initdb", ["-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"]);

  let port = await freePort();
  let server: ChildProcess | undefined;
  let output = "";
  let databases = 0;
  let stopped = false;

  const launch = (): ChildProcess => {
    // Speed over durability: a test server's data may be lost with the machine, never its answers.
    const settings = [
      `port=${port}`,
      "listen_addresses=127.0.0.1",
      "unix_socket_directories=",
      "fsync=off",
      "synchronous_commit=off",
      "full_page_writes=off",
      "max_connections=200",
      "shared_buffers=32MB",
    ];
    const { command, args } = asServerUser(user, join(bin, "postgres"), [
      "-D",
      data,
      ...settings.flatMap((s) => ["-c", s]),
    ]);
    const child = spawn(command, args, { cwd: dir, stdio: ["ignore", "pipe", "pipe"] });
    const keep = (chunk: Buffer) => {
      output = (output + chunk.toString()).slice(-20_000);
    };
    child.stdout?.on("data", keep);
    child.stderr?.on("data", keep);
    return child;
  };

  const accepts = async (): Promise<boolean> => {
    const client = new pg.Client({ connectionString: url(), connectionTimeoutMillis: 1000 });
    client.on("error", () => {});
    try {
      await client.connect();
      await client.query("SELECT 1");
      return true;
    } catch {
      return false;
    } finally {
      await client.end().catch(() => {});
    }
  };

  const url = (database = "postgres") => `postgres://postgres@127.0.0.1:${port}/${database}`;

  const up = async (): Promise<void> => {
    if (stopped) throw new Error("this test PostgreSQL was stopped for good");
    if (server) return;
    const child = launch();
    server = child;
    const exited = () => child.exitCode !== null || child.signalCode !== null;
    await until(async () => exited() || (await accepts()), "the test PostgreSQL to accept connections", 60_000, log);
    if (exited()) {
      server = undefined;
      throw new Error(`the test PostgreSQL exited at start:\n${output}`);
    }
  };

  const down = async (): Promise<void> => {
    const child = server;
    server = undefined;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, "exit");
    child.kill("SIGINT"); // fast shutdown: sessions are cut off, as when the database goes away
    await exited;
  };

  const log = () => output;

  /** The postmaster and its children (sessions, background workers), by process id. */
  const serverPids = (): number[] => {
    const main = server?.pid;
    if (!main) throw new Error("the test PostgreSQL is not running");
    const children = execFileSync("ps", ["-o", "pid=", "--ppid", String(main)], { encoding: "utf8" });
    return [main, ...children.split("\n").filter(Boolean).map(Number)];
  };

  // The free port may be taken again between freePort() and the server's bind: try another.
  for (let attempt = 1; ; attempt++) {
    try {
      await up();
      break;
    } catch (err) {
      if (attempt >= 3 || !/could not bind|Address already in use/i.test(output)) {
        rmSync(dir, { recursive: true, force: true });
        throw err;
      }
      output = "";
      port = await freePort();
    }
  }

  return {
    get url() {
      return url();
    },
    get port() {
      return port;
    },
    dir,
    async newDatabase() {
      databases += 1;
      const name = `pincer_test_${databases}`;
      const client = new pg.Client({ connectionString: url() });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE ${name}`);
      } finally {
        await client.end();
      }
      return url(name);
    },
    down,
    up,
    async restart() {
      await down();
      await up();
    },
    pause() {
      // The postmaster first, so it forks no new session while its sessions are being stopped.
      for (const pid of serverPids()) process.kill(pid, "SIGSTOP");
    },
    resume() {
      for (const pid of serverPids().reverse()) process.kill(pid, "SIGCONT");
    },
    async stop() {
      if (stopped) return;
      await down();
      stopped = true;
      rmSync(dir, { recursive: true, force: true });
    },
    log,
  };
}
