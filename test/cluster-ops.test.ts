/**
 * Operating a cluster: `pincer status` and `pincer doctor` show it, `/healthz` on a process that
 * holds no channel reports the cluster's view, and a helper (spawn) whose process is killed is
 * marked interrupted by the others. Built `pincer gateway` processes on one real PostgreSQL,
 * against the fake Bot API and the fake model.
 */
import { beforeEach, describe, expect, it } from "vitest";
import { clusterOnPostgres } from "./helpers/cluster.js";
import { type Daemon, gatewayOnFakes, killHard, pincer, USER } from "./helpers/daemon.js";
import { freePort } from "./helpers/net.js";
import { hasPostgres } from "./helpers/postgres.js";

const havePostgres = hasPostgres();
const LEASE_SECONDS = 3;
const SECRET = "s3cret-never-shown";
const fakes = gatewayOnFakes();
const { model, say } = fakes;
const isHelper = (content: unknown) => String(content).startsWith("You are a background helper");

describe.skipIf(!havePostgres)("operating clustered pincer gateways", () => {
  const cluster = clusterOnPostgres(fakes, {
    prefix: "pincer-ops-",
    leaseSeconds: LEASE_SECONDS,
    // The test server trusts every local connection: the password is only there to be hidden.
    url: (url) => url.replace("postgres@", `postgres:${SECRET}@`),
  });
  const { gateway, query, holderOf, allUp, settled } = cluster;
  beforeEach(() => {
    model.respond(() => ({ content: "pong" }));
  });

  const cli = (args: string[], env: Record<string, string> = {}) =>
    pincer(args, cluster.home, {
      OPENAI_API_KEY: "test",
      OPENAI_BASE_URL: model.url,
      PINCER_SANDBOX: "none",
      PINCER_WEB_ADDR: "off",
      TELEGRAM_BOT_TOKEN: fakes.telegram.token,
      TELEGRAM_API_ROOT: fakes.telegram.apiRoot,
      PINCER_DATABASE_URL: cluster.url,
      ...env,
    });

  it("pincer status and pincer doctor show the processes, the roles' holders and the database without its password", async () => {
    const daemons = [gateway(), gateway()];
    await allUp(daemons);
    const holder = (await holderOf("channel:telegram", daemons)) as Daemon;

    const status = await cli(["status"]);
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(/^database: +PostgreSQL at 127\.0\.0\.1:\d+\/pincer_test_\d+$/m);
    expect(status.stdout).toContain("cluster:       2 processes");
    for (const d of daemons)
      expect(status.stdout).toMatch(new RegExp(`^  \\S+:${d.pid} heartbeat [\\d.]+ s ago; roles: `, "m"));
    expect(status.stdout).toMatch(
      new RegExp(`^  channel:telegram +\\S+:${holder.pid} \\(epoch \\d+, renewed within`, "m"),
    );
    expect(status.stdout).toMatch(/^ {2}scheduler +\S+:\d+ \(epoch \d+/m);
    expect(status.stdout).toMatch(/^ {2}turns waiting +none$/m);
    expect(status.stdout).toMatch(/^waiting: +0 inbound, 0 outbound$/m);

    const doctor = await cli(["doctor"]);
    expect(doctor.stdout).toMatch(/^\[ok {2}\] database: PostgreSQL at 127\.0\.0\.1:\d+\/pincer_test_\d+$/m);
    expect(doctor.stdout).toMatch(/^\[ok {2}\] cluster: 2 live processes; every role is held$/m);
    expect(doctor.stdout).not.toContain("pincer.db");
    for (const out of [status, doctor]) expect(out.stdout + out.stderr).not.toContain(SECRET);

    // A role nobody holds (the web chat, which these gateways do not serve) is a warning naming it.
    const withPage = await cli(["doctor"], { PINCER_WEB_ADDR: "127.0.0.1:1" });
    expect(withPage.stdout).toMatch(/^\[warn\] cluster: 2 live processes; held by nobody: channel:web \(start/m);

    // A database that does not exist, or no server at all: one sentence naming it, no stack trace.
    const missing = cluster.url.replace(/pincer_test_\d+$/, "no_such_db");
    const closed = `postgres://postgres:${SECRET}@127.0.0.1:${await freePort()}/pincer`;
    for (const [wrong, why] of [
      [missing, /database "no_such_db" does not exist/],
      [closed, /ECONNREFUSED/],
    ] as const) {
      for (const command of [["status"], ["cron", "list"]]) {
        const out = await cli(command, { PINCER_DATABASE_URL: wrong });
        expect(out.code).toBe(1);
        expect(out.stderr.trim()).toMatch(
          /^pincer: cannot use the database at PINCER_DATABASE_URL \(PostgreSQL at 127\.0\.0\.1:\d+\/\w+\): /,
        );
        expect(out.stderr).toMatch(why);
        expect(out.stderr.trim().split("\n")).toHaveLength(1);
        expect(out.stdout + out.stderr).not.toContain(SECRET);
      }
      const doctor = await cli(["doctor"], { PINCER_DATABASE_URL: wrong });
      expect(doctor.code).toBe(1);
      expect(doctor.stdout).toMatch(/^\[FAIL\] database: cannot open PostgreSQL at 127\.0\.0\.1:\d+\/\w+: /m);
      expect(doctor.stdout + doctor.stderr).not.toContain(SECRET);
    }

    // Without PINCER_DATABASE_URL nothing of the cluster shows: the SQLite file is the database.
    const embedded = await cli(["doctor"], { PINCER_DATABASE_URL: "" });
    expect(embedded.stdout).toMatch(/^\[ok {2}\] database: .*pincer\.db$/m);
    expect(embedded.stdout).not.toMatch(/cluster|PostgreSQL/);
    expect((await cli(["status"], { PINCER_DATABASE_URL: "" })).stdout).not.toMatch(/cluster|PostgreSQL/);
  }, 120_000);

  it("/healthz on a process that holds no channel says the channel is up on its holder, and follows a takeover", async () => {
    const ports = [await freePort(), await freePort()];
    const daemons = ports.map((port) =>
      gateway({ PINCER_WEB_ADDR: `127.0.0.1:${port}`, PINCER_WEB_TOKEN: "t".repeat(32) }),
    );
    await allUp(daemons, ["channel:telegram", "channel:web", "scheduler"]);
    const health = async (port: number) => {
      const res = await fetch(`http://127.0.0.1:${port}/healthz`);
      return {
        status: res.status,
        body: (await res.json()) as { channels: Record<string, { state: string; detail?: string }> },
      };
    };
    const holder = (await holderOf("channel:telegram", daemons)) as Daemon;
    const other = daemons.find((d) => d !== holder) as Daemon;
    const portOf = (d: Daemon) => ports[daemons.indexOf(d)];
    await fakes.until(async () => (await health(portOf(holder))).status === 200, "the holder's /healthz to be 200");
    const elsewhere = await health(portOf(other));
    expect(elsewhere.status).toBe(200);
    expect(elsewhere.body.channels.telegram).toEqual({
      state: "connected",
      detail: expect.stringMatching(new RegExp(`^held by \\S+:${holder.pid}$`)),
    });
    expect((await health(portOf(holder))).body.channels.telegram).toEqual({ state: "connected" });

    await killHard(holder);
    // Until the lease runs out the dead holder still counts; then the survivor takes it.
    await fakes.until(
      async () => {
        const now = await health(portOf(other));
        return now.status === 200 && now.body.channels.telegram.detail === undefined && now.body;
      },
      "the survivor to run Telegram itself",
      30_000,
    );
    say("after the takeover");
    await fakes.until(() => fakes.telegram.sent.some((m) => m.text === "pong"), "an answer from the survivor", 30_000);
  }, 120_000);

  it("marks a helper interrupted when its process is killed, and tells its chat once", async () => {
    model.respond((request) => {
      if (isHelper(request.messages[0]?.content)) return { content: "never arrives", delayMs: 60_000 };
      const last = request.messages.at(-1);
      if (last?.role === "tool") return { content: "A helper is on it." };
      const text = String(last?.content ?? "");
      if (text.startsWith("[system: helper]"))
        return { content: `NOTICE ${text.includes("process running it stopped") ? "died" : "?"}` };
      return { toolCalls: [{ name: "spawn", arguments: { task: "count the stars", label: "stars" } }] };
    });
    const daemons = [gateway(), gateway()];
    await allUp(daemons);
    say("count the stars, take your time");
    await fakes.until(
      () => fakes.telegram.sent.some((m) => m.text === "A helper is on it."),
      "the spawn's answer",
      30_000,
    );
    await fakes.until(() => model.requests.some((r) => isHelper(r.messages[0]?.content)), "the helper's model call");
    const runner = (await fakes.until(() => holderOf("helper:%", daemons), "the helper's process", 10_000)) as Daemon;
    const status = await cli(["status"]);
    expect(status.stdout).toMatch(new RegExp(`:${runner.pid} heartbeat .*; helpers running: 1$`, "m"));
    expect(status.stdout).toMatch(/^ {2}h-\w+ running +.*"stars": count the stars$/m);
    await killHard(runner);

    const notice = await fakes.until(
      () => fakes.telegram.sent.find((m) => m.text.startsWith("NOTICE")),
      "the survivor to report the helper interrupted",
      60_000,
    );
    expect(notice).toMatchObject({ chatId: String(USER), text: "NOTICE died" });
    // Declared interrupted, the helper is no longer anyone's to declare again; with the notice's turn done and sent,
    // nothing is left that could tell the chat a second time.
    await fakes.until(
      async () => (await query<{ status: string }>("SELECT status FROM helper_runs"))[0]?.status === "interrupted",
      "the helper to be recorded interrupted",
    );
    await settled();
    expect(fakes.telegram.sent.filter((m) => m.text.startsWith("NOTICE"))).toHaveLength(1);
    expect(await query("SELECT label, status, result FROM helper_runs")).toEqual([
      { label: "stars", status: "interrupted", result: "interrupted: the pincer process running it stopped" },
    ]);
  }, 120_000);
});
