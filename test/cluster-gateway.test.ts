/**
 * Clustered mode end to end: two and three built `pincer gateway` processes on one real
 * PostgreSQL, against the fake Bot API and the fake model, killed (SIGKILL), paused (SIGSTOP) and
 * cut off from the database at the worst moments. Each test asserts the exact set of replies:
 * none lost, none doubled.
 */
import { beforeEach, describe, expect, it } from "vitest";
import { clusterOnPostgres, logged } from "./helpers/cluster.js";
import { type Daemon, gatewayOnFakes, killHard } from "./helpers/daemon.js";
import { hasPostgres } from "./helpers/postgres.js";

const havePostgres = hasPostgres();
const LEASE_SECONDS = 3;
const fakes = gatewayOnFakes();
const { model, say } = fakes;

/** The text of the newest user message of a request (the fake model answers "re: " + it). */
function lastUserText(messages: Array<{ role: string; content?: unknown }>): string {
  const content = messages.filter((m) => m.role === "user").at(-1)?.content;
  if (typeof content === "string") return content;
  return JSON.stringify(content ?? "");
}

describe.skipIf(!havePostgres)("clustered pincer gateways on one PostgreSQL", () => {
  // One PINCER_HOME for every process: the shared storage of a real cluster (media, workspace).
  const cluster = clusterOnPostgres(fakes, { prefix: "pincer-cluster-", leaseSeconds: LEASE_SECONDS });
  const { gateway, holderOf, allUp, settled, query } = cluster;
  beforeEach(() => {
    model.respond((request) => ({ content: `re: ${lastUserText(request.messages).replace(/^.*\n/s, "")}` }));
  });

  const replies = () => fakes.telegram.sent.map((m) => m.text);
  const answered = (text: string) => replies().filter((r) => r === `re: ${text}`).length;
  const pendingReplies = async () =>
    (await query<{ n: number }>("SELECT count(*)::int AS n FROM outbox WHERE status = 'pending'"))[0]?.n;

  /**
   * Call before cutting the database off. `ended()` waits until every lease held at that moment has ended: a living
   * holder's in its own view (it logged giving it up), a dead holder's once its stored expiry has passed (the
   * database's count, measured here from the answer: time is the input, as nothing renews it).
   * An outage "past every lease" is then a fact, not a guess about how long a lease takes on a busy machine.
   * `stood(name, holder)` says whether that lease of that holder certainly still stands now (measured from the query).
   */
  async function leasesNow(daemons: Daemon[]) {
    const sentAt = performance.now();
    const rows = await query<{ name: string; holder: string; left_ms: number }>(
      `SELECT name, holder, extract(epoch FROM expires_at - now())::float8 * 1000 AS left_ms
         FROM cluster_leases WHERE expires_at > now()`,
    );
    const answeredAt = performance.now();
    // Per holder and kind of lease: how many it holds, and how often it had logged losing one before.
    const losses = new Map<string, { daemon: Daemon; msg: string; before: number; held: number }>();
    let runsOutAt = 0;
    const watched = rows.flatMap(({ name, holder, left_ms }) => {
      const daemon = daemons.find((d) => String(d.pid) === holder.split(":").at(-2));
      if (!daemon || name.startsWith("helper:")) return [];
      if (daemon.exitCode !== null || daemon.signalCode !== null) {
        runsOutAt = Math.max(runsOutAt, answeredAt + left_ms);
      } else {
        const msg = name.startsWith("turn:")
          ? "lost a conversation's turn lease; another process runs it now"
          : "this process gives the role up";
        const key = `${daemon.pid} ${msg}`;
        const loss = losses.get(key) ?? { daemon, msg, before: logged(daemon, msg), held: 0 };
        losses.set(key, { ...loss, held: loss.held + 1 });
      }
      return [{ name, daemon, standsUntil: sentAt + left_ms }];
    });
    // Nothing watched would make the wait pass at once: the outage must start while leases are held.
    expect(watched.length).toBeGreaterThan(0);
    return {
      stood: (name: string, holder: Daemon) =>
        watched.some((l) => l.name === name && l.daemon === holder && performance.now() < l.standsUntil),
      ended: async () => {
        await fakes.until(
          () =>
            performance.now() >= runsOutAt &&
            [...losses.values()].every(({ daemon, msg, before, held }) => logged(daemon, msg) >= before + held),
          "every lease held when the database went away to end",
          60_000,
        );
      },
    };
  }

  it("answers every message once with two gateways", async () => {
    const daemons = [gateway(), gateway()];
    await allUp(daemons);
    const texts = Array.from({ length: 12 }, (_, i) => `two-${i}`);
    for (const text of texts) say(text);
    await fakes.until(() => texts.every((t) => answered(t) === 1), "every message answered", 20_000);
    await settled();
    for (const text of texts) expect(answered(text)).toBe(1);
    expect(replies()).toHaveLength(texts.length);
  }, 120_000);

  it("keeps answering, each message once, when the Telegram holder is killed with SIGKILL", async () => {
    const daemons = [gateway(), gateway(), gateway()];
    await allUp(daemons);
    say("before-0");
    await fakes.until(() => answered("before-0") === 1, "the first answer", 30_000);
    const holder = (await holderOf("channel:telegram", daemons)) as Daemon;
    await killHard(holder);
    const texts = Array.from({ length: 6 }, (_, i) => `after-${i}`);
    for (const text of texts) say(text);
    await fakes.until(() => texts.every((t) => answered(t) === 1), "every message answered after the kill", 60_000);
    await settled();
    expect(replies().sort()).toEqual(["re: before-0", ...texts.map((t) => `re: ${t}`)].sort());
  }, 120_000);

  it("finishes a multi-part reply on the new holder when the Telegram holder is killed with SIGKILL mid-send", async () => {
    const parts = Array.from({ length: 5 }, (_, i) => `Part ${i + 1}: ${"lorem ipsum ".repeat(300)}`);
    model.respond((request) => {
      const text = lastUserText(request.messages).replace(/^.*\n/s, "");
      return { content: text === "long please" ? parts.join("\n\n") : `re: ${text}` };
    });
    const daemons = [gateway(), gateway()];
    await allUp(daemons);
    // Telegram takes parts 1 and 2; part 3 reaches it, and its sender dies before the answer.
    const third = fakes.telegram.holdCall("sendMessage", 3);
    say("long please");
    await third.arrived;
    const holder = (await holderOf("channel:telegram", daemons)) as Daemon;
    await killHard(holder);
    await third.clientGone;
    third.release();
    say("after the kill");
    await fakes.until(() => replies().length >= 6, "the other parts and the newer answer from the new holder", 60_000);
    await settled();
    expect(replies().map((text) => text.slice(0, 15))).toEqual([
      "Part 1: lorem i",
      "Part 2: lorem i",
      "Part 3: lorem i",
      "Part 4: lorem i",
      "Part 5: lorem i",
      "re: after the k",
    ]);
    // The long reply's turn was finished before the kill: the model was not asked again.
    expect(model.requests.map((r) => lastUserText(r.messages).replace(/^.*\n/s, ""))).toEqual([
      "long please",
      "after the kill",
    ]);
  }, 120_000);

  it("resumes a turn whose process was killed mid-turn on another process, with one answer", async () => {
    let slowAsked = 0;
    model.respond((request) => {
      const text = lastUserText(request.messages);
      if (text.includes("slow") && slowAsked++ === 0) return { content: "never sent", delayMs: 30_000 };
      return { content: `re: ${text.replace(/^.*\n/s, "")}` };
    });
    const daemons = [gateway(), gateway()];
    await allUp(daemons);
    say("slow");
    await fakes.until(() => slowAsked === 1, "the slow turn to start", 30_000);
    const runner = (await fakes.until(
      async () => holderOf("turn:telegram:42", daemons),
      "the process running the turn",
      10_000,
    )) as Daemon;
    await killHard(runner);
    await fakes.until(() => answered("slow") === 1, "the turn resumed elsewhere", 60_000);
    await settled();
    expect(replies()).toEqual(["re: slow"]);
  }, 120_000);

  it("fences out a process paused past its lease mid-turn: on SIGCONT nothing of its turn is sent", async () => {
    let slowAsked = 0;
    model.respond((request) => {
      const text = lastUserText(request.messages);
      if (text.includes("paused") && slowAsked++ === 0) return { content: "stale answer", delayMs: 1500 };
      return { content: `re: ${text.replace(/^.*\n/s, "")}` };
    });
    const daemons = [gateway(), gateway()];
    await allUp(daemons);
    say("paused");
    await fakes.until(() => slowAsked === 1, "the turn to start", 30_000);
    const runner = (await fakes.until(
      async () => holderOf("turn:telegram:42", daemons),
      "the turn's process",
      10_000,
    )) as Daemon;
    runner.kill("SIGSTOP");
    try {
      await fakes.until(() => answered("paused") === 1, "another process to answer", 60_000);
    } finally {
      runner.kill("SIGCONT");
    }
    // Woken, the paused process finds its lease gone and drops the turn; only then is "nothing of its turn" final.
    await fakes.until(
      () => logged(runner, "lost a conversation's turn lease; another process runs it now") > 0,
      "the woken process to see that it lost the turn",
      30_000,
    );
    await settled();
    expect(replies()).toEqual(["re: paused"]);
  }, 120_000);

  it("fires each reminder once while the scheduler's holder is killed with SIGKILL at its tick and before one", async () => {
    const asked = /set it up: (.+)/;
    const fired: string[] = [];
    model.respond((request) => {
      const last = request.messages.at(-1);
      const text = lastUserText(request.messages);
      if (last?.role === "tool") return { content: `Okay. ${String(last.content).split("\n")[0]}` };
      const due = asked.exec(text);
      if (due) {
        fired.push(due[1]);
        // The first run's answer is held back until after the kill: a kill between Telegram's
        // answer and the outbox's record of it resends (the Delivery section's one honest
        // exception), which is not what this test is about.
        const first = fired.filter((f) => f === due[1]).length === 1;
        return { content: `REMINDER: ${due[1]}`, delayMs: first ? 8000 : 0 };
      }
      const remind = /remind (\w+) in (\d+)/.exec(text);
      if (remind) {
        const at = new Date(Date.now() + Number(remind[2]) * 1000).toISOString();
        return { toolCalls: [{ name: "cron", arguments: { action: "add", message: remind[1], at } }] };
      }
      return { content: `re: ${text.replace(/^.*\n/s, "")}` };
    });
    const daemons = [gateway(), gateway(), gateway()];
    await allUp(daemons);
    await fakes.until(async () => holderOf("scheduler", daemons), "a scheduler", 30_000);
    say("remind pizza in 5");
    await fakes.until(
      () => replies().filter((r) => r.startsWith("Okay.")).length === 1,
      "the first confirmation",
      30_000,
    );
    say("remind tea in 20");
    await fakes.until(
      () => replies().filter((r) => r.startsWith("Okay.")).length === 2,
      "the second confirmation",
      30_000,
    );
    // Killed at its tick: the moment the first reminder's run reaches the model.
    const first = (await holderOf("scheduler", daemons)) as Daemon;
    await fakes.until(() => fired.includes("pizza"), "the first reminder to fire", 30_000);
    await killHard(first);
    // The next holder, killed before the second one is due, but only once the first reminder's resumed run is answered
    // and recorded as sent: a message two processes died while running is set aside by design (POISON_NOTICE), and a
    // kill between Telegram's answer and the outbox's record resends (the Delivery section's exception).
    const second = (await fakes.until(
      async () =>
        holderOf(
          "scheduler",
          daemons.filter((d) => d !== first),
        ),
      "another scheduler",
      30_000,
    )) as Daemon;
    await fakes.until(() => replies().includes("REMINDER: pizza"), "the first reminder", 60_000);
    await fakes.until(async () => (await pendingReplies()) === 0, "the first reminder recorded as sent", 30_000);
    expect(fired).not.toContain("tea");
    await killHard(second);
    await fakes.until(() => replies().includes("REMINDER: tea"), "the second reminder", 60_000);
    // A one-shot reminder's job is removed in the transaction that queues its run: with no job left and the cluster at
    // rest, no reminder can fire or be answered again.
    await fakes.until(
      async () => (await query<{ n: number }>("SELECT count(*)::int AS n FROM cron_jobs"))[0]?.n === 0,
      "both reminders' jobs to be gone",
      30_000,
    );
    await settled();
    expect(
      replies()
        .filter((r) => r.startsWith("REMINDER:"))
        .sort(),
    ).toEqual(["REMINDER: pizza", "REMINDER: tea"]);
    expect(replies()).toHaveLength(4);
  }, 180_000);

  it("sends a reply once when PostgreSQL restarts between Telegram taking it and the outbox recording it", async () => {
    const daemons = [gateway(), gateway()];
    await allUp(daemons);
    const held = fakes.telegram.holdCall("sendMessage", 1);
    say("mid-send");
    await held.arrived;
    await cluster.server.down();
    held.release();
    await cluster.server.up(); // a new server: every connection was cut
    await fakes.until(() => answered("mid-send") === 1, "the reply", 30_000);
    say("after-restart");
    await fakes.until(() => answered("after-restart") === 1, "the next answer", 30_000);
    await fakes.until(async () => (await pendingReplies()) === 0, "every reply recorded as sent", 30_000);
    await settled();
    expect(replies()).toEqual(["re: mid-send", "re: after-restart"]);
    expect(daemons.map((d) => d.exitCode ?? d.signalCode)).toEqual([null, null]);
  }, 120_000);

  it("answers a turn once when PostgreSQL goes away in the middle of it", async () => {
    let slowAsked = 0;
    model.respond((request) => {
      const text = lastUserText(request.messages);
      if (text.includes("mid-turn") && slowAsked++ === 0) return { content: "re: mid-turn", delayMs: 2000 };
      return { content: `re: ${text.replace(/^.*\n/s, "")}` };
    });
    const daemons = [gateway(), gateway()];
    await allUp(daemons);
    say("mid-turn");
    await fakes.until(() => slowAsked === 1, "the turn to start", 30_000);
    const leases = await leasesNow(daemons);
    await cluster.server.down();
    await leases.ended(); // past every lease
    await cluster.server.up();
    await fakes.until(() => answered("mid-turn") === 1, "the turn's answer after the outage", 60_000);
    await fakes.until(async () => (await pendingReplies()) === 0, "the reply recorded as sent", 30_000);
    await settled();
    expect(replies()).toEqual(["re: mid-turn"]);
    expect(daemons.map((d) => d.exitCode ?? d.signalCode)).toEqual([null, null]);
  }, 120_000);

  it("answers what was sent while PostgreSQL did not answer past every lease and lease round (paused, its connections open), once each", async () => {
    const daemons = [gateway(), gateway()];
    await allUp(daemons);
    say("up-0");
    await fakes.until(() => answered("up-0") === 1, "the first answer", 30_000);
    await fakes.until(async () => (await pendingReplies()) === 0, "the first reply recorded as sent");
    const leases = await leasesNow(daemons);
    cluster.server.pause();
    try {
      for (const text of ["paused-0", "paused-1"]) say(text);
      // Silent past every lease, and past the query timeout of every process's lease round.
      await leases.ended();
      await fakes.until(
        () => daemons.every((d) => logged(d, "the cluster's database does not answer") > 0),
        "every process's lease round to time out",
        60_000,
      );
    } finally {
      cluster.server.resume();
    }
    await fakes.until(() => answered("paused-0") === 1 && answered("paused-1") === 1, "the answers after", 90_000);
    say("after");
    await fakes.until(() => answered("after") === 1, "a new message's answer", 60_000);
    await settled();
    expect(replies().sort()).toEqual(["re: after", "re: paused-0", "re: paused-1", "re: up-0"]);
    expect(daemons.map((d) => d.exitCode ?? d.signalCode)).toEqual([null, null]);
  }, 180_000);

  it("answers once each when PostgreSQL goes down during the takeover from a killed Telegram holder", async () => {
    const daemons = [gateway(), gateway(), gateway()];
    await allUp(daemons);
    say("up-0");
    await fakes.until(() => answered("up-0") === 1, "the first answer", 30_000);
    await fakes.until(async () => (await pendingReplies()) === 0, "the first reply recorded as sent");
    const dead = (await holderOf("channel:telegram", daemons)) as Daemon;
    await killHard(dead);
    say("takeover-0");
    // Down while the others wait out the dead holder's lease; back once it has run out and every lease the living held
    // has ended in their view.
    const leases = await leasesNow(daemons);
    await cluster.server.down();
    // The outage began while the dead holder's lease still stood: no one could take its role before the database left.
    expect(leases.stood("channel:telegram", dead)).toBe(true);
    say("takeover-1");
    await leases.ended();
    await cluster.server.up();
    await fakes.until(() => answered("takeover-0") === 1 && answered("takeover-1") === 1, "the answers", 90_000);
    await settled();
    expect(replies().sort()).toEqual(["re: takeover-0", "re: takeover-1", "re: up-0"]);
    expect(daemons.filter((d) => d.exitCode === null && d.signalCode === null)).toHaveLength(2);
  }, 180_000);

  it("answers what was sent while PostgreSQL was down past every lease, once each, after it is back", async () => {
    const daemons = [gateway(), gateway()];
    await allUp(daemons);
    say("up-0");
    await fakes.until(() => answered("up-0") === 1, "the first answer", 30_000);
    // Down only once that reply's delivery is recorded: an outage between Telegram's answer and
    // that write, longer than the sender's grace, sends it again (the Delivery section's exception).
    await fakes.until(async () => (await pendingReplies()) === 0, "the first reply recorded as sent");
    const leases = await leasesNow(daemons);
    await cluster.server.down();
    const texts = ["down-0", "down-1", "down-2"];
    for (const text of texts) say(text);
    // The Telegram holder polled them before it gave its role up: their inbox rows could not be written.
    await fakes.until(
      () => daemons.some((d) => logged(d, "could not store an arriving message") > 0),
      "the holder to fail to store what it polled",
      15_000,
    );
    await leases.ended();
    await cluster.server.up();
    await fakes.until(() => texts.every((t) => answered(t) === 1), "the answers after the outage", 90_000);
    await settled();
    expect(replies().sort()).toEqual(["re: up-0", ...texts.map((t) => `re: ${t}`)].sort());
    // Nobody crashed on the way (an unhandled rejection would have ended a process).
    expect(daemons.map((d) => d.exitCode ?? d.signalCode)).toEqual([null, null]);
  }, 180_000);
});
