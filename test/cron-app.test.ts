import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { App } from "../src/app.js";
import type { InboundMessage } from "../src/bus/types.js";
import { databasePath } from "../src/paths.js";
import { jobCommand } from "../src/scheduler/cron-commands.js";
import { openDatabase } from "../src/store/sqlite/database.js";
import { openSqliteStore } from "../src/store/sqlite/sqlite-store.js";
import type { FakeReply } from "./fakes/openai-server.js";
import { quiet, recordingChannel, tempHome, testApp, userMessage } from "./helpers/app.js";
import { fakeModelForFile } from "./helpers/model.js";

/**
 * The cron tool, the scheduler and the agent worker together, through the real app wiring
 * (SQLite journal, bus, worker) and a scripted model over HTTP. Times are real but short.
 */

const fake = fakeModelForFile();

const apps: App[] = [];
afterEach(async () => {
  for (const app of apps.splice(0)) await app.stop().catch(() => {});
});

const SCHEDULER_PREFIX = "[system: scheduler]";

/**
 * A model that answers a user message with `onUser`, a tool result with "done: <result>", and a
 * scheduled run with "REMINDER: <what the user asked for>" (or `onRun`, to test what a run may do).
 */
function scriptModel(onUser: (text: string) => FakeReply, onRun?: (text: string) => FakeReply) {
  fake.respond((request) => {
    const last = request.messages.at(-1);
    const text = String(last?.content ?? "");
    if (last?.role === "tool") return { content: `done: ${text}` };
    if (text.startsWith(SCHEDULER_PREFIX)) {
      if (onRun) return onRun(text);
      return { content: `REMINDER: ${/set it up: (.*)/.exec(text)?.[1]}` };
    }
    return onUser(text);
  });
}

async function start(home: string, adjust?: Parameters<typeof testApp>[3]) {
  const app = await testApp(fake.url, home, {}, adjust);
  apps.push(app);
  const channel = recordingChannel(app);
  await app.start([channel]);
  return { app, channel };
}

async function stop(app: App): Promise<void> {
  apps.splice(apps.indexOf(app), 1);
  await app.stop();
}

function threadMessage(text: string): InboundMessage {
  return { ...userMessage("kitchen", text), isGroup: true, sessionKey: "console:kitchen:thread:7" };
}

/** The runs that entered the inbox for a job, in order, with the slot each one was for. */
function runsOf(home: string): Array<{ jobId: string; scheduledAt: number; text: string }> {
  const db = openDatabase(databasePath(home));
  try {
    return (db.prepare("SELECT payload FROM inbox ORDER BY rowid").pluck().all() as string[])
      .map((p) => JSON.parse(p) as InboundMessage)
      .flatMap((m) => (m.channel === "system" && m.run.kind === "cron" ? [{ ...m.run, text: m.text }] : []))
      .map(({ jobId, scheduledAt, text }) => ({ jobId, scheduledAt, text }));
  } finally {
    db.close();
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A one-shot job in console chat "control", due at `at`, whose delivery proves the scheduler's tick at that time
 * happened: a job due then that should not fire (removed, say) would have fired in the same tick.
 */
async function controlJob(app: App, at: number): Promise<void> {
  const origin = { channel: "console" as const, chatId: "control", sessionKey: "console:control", isGroup: false };
  const schedule = { kind: "at" as const, at };
  const owner = { channel: "console" as const, userId: "user" };
  await app.store.jobs.add({
    message: "control",
    schedule,
    tz: "UTC",
    origin,
    owner,
    createdAt: Date.now(),
    nextRunAt: at,
  });
  app.scheduler.wake();
}

describe("reminders through the app", () => {
  it("delivers a reminder set in a thread to that chat and thread, once, and a run may not schedule again", async () => {
    const home = tempHome();
    scriptModel(
      () => ({
        toolCalls: [
          {
            name: "cron",
            arguments: { action: "add", message: "take the pizza out", at: new Date(Date.now() + 1500).toISOString() },
          },
        ],
      }),
      // The run's model tries to schedule another job (a runaway loop); its tool result becomes the reply.
      () => ({ toolCalls: [{ name: "cron", arguments: { action: "add", message: "again", every_seconds: 60 } }] }),
    );
    const { app, channel } = await start(home);
    await app.bus.publishInbound(threadMessage("remind me in a moment to take the pizza out"));
    await channel.waitFor(1);
    expect(channel.sent[0]).toMatchObject({ chatId: "kitchen", threadId: "7" });
    expect(channel.sent[0].text).toMatch(/^done: Scheduled job [0-9a-f]{8}: once at .* UTC/);

    await channel.waitFor(2);
    const reminder = channel.sent[1];
    expect(reminder).toMatchObject({ channel: "console", chatId: "kitchen", threadId: "7", kind: "reply" });
    expect(reminder.text).toMatch(/^done: Error: cron is not available in a scheduled run/);
    const runRequest = fake.requests.find((r) => String(r.messages.at(-1)?.content).startsWith(SCHEDULER_PREFIX));
    // The scheduled run is not even offered cron (nor spawn); the person's turn was.
    const offered = (r: (typeof fake.requests)[number] | undefined) => r?.tools?.map((t) => t.function.name) ?? [];
    expect(offered(fake.requests[0])).toContain("cron");
    expect(offered(runRequest)).not.toContain("cron");
    expect(offered(fake.requests[0])).toContain("spawn");
    expect(offered(runRequest)).not.toContain("spawn");
    expect(offered(runRequest)).toContain("exec");
    expect(offered(runRequest)).toContain("read_file");
    expect(String(runRequest?.messages.at(-1)?.content)).toContain("take the pizza out");
    expect(String(runRequest?.messages.at(-1)?.content)).not.toContain("late");
    expect(await app.store.jobs.listAll()).toEqual([]);

    // No job left, nothing waiting and nothing due now, past its time: no second delivery can come.
    await quiet(app, "console");
    expect(await app.scheduler.runDue()).toBe(0);
    expect(channel.sent).toHaveLength(2);
    expect(runsOf(home)).toHaveLength(1);
  });

  it("offers a scheduled run only the tools in cron.tools, and refuses a call to another one", async () => {
    const home = tempHome();
    scriptModel(
      () => ({
        toolCalls: [
          {
            name: "cron",
            arguments: { action: "add", message: "tidy up", at: new Date(Date.now() + 800).toISOString() },
          },
        ],
      }),
      () => ({ toolCalls: [{ name: "exec", arguments: { command: "echo hi" } }] }),
    );
    const { app, channel } = await start(home, (config) => {
      config.cron.tools = ["read_file", "list_dir"];
    });
    await app.bus.publishInbound(userMessage("tidy", "tidy up in a moment"));
    await channel.waitFor(2);
    expect(channel.sent[1].text).toMatch(/^done: Error: exec is not available in a scheduled run \(config cron.tools/);
    const runRequest = fake.requests.find((r) => String(r.messages.at(-1)?.content).startsWith(SCHEDULER_PREFIX));
    expect(runRequest?.tools?.map((t) => t.function.name).sort()).toEqual(["list_dir", "read_file"]);
  });

  it("after a restart, delivers a reminder that came due while down exactly once, saying it is late", async () => {
    const home = tempHome();
    scriptModel(() => ({
      toolCalls: [
        {
          name: "cron",
          arguments: { action: "add", message: "call mum", at: new Date(Date.now() + 60_000).toISOString() },
        },
      ],
    }));
    const first = await start(home);
    await first.app.bus.publishInbound(userMessage("home", "remind me in a minute to call mum"));
    await first.channel.waitFor(1);
    await stop(first.app);

    // Down for longer than that: the job's time is now five minutes in the past.
    const db = openDatabase(databasePath(home));
    const past = Date.now() - 5 * 60_000;
    db.prepare("UPDATE cron_jobs SET at_ms = ?, next_run_at = ?").run(past, past);
    db.close();

    const second = await start(home);
    await second.channel.waitFor(1);
    expect(second.channel.sent[0]).toMatchObject({ chatId: "home", text: "REMINDER: call mum" });
    const [run] = runsOf(home);
    // A busy machine may take seconds to restart: "5 min 1 s ago" is as right.
    expect(run.text).toMatch(/This comes late: it was due at .*, 5 min( \d+ s)? ago/);
    await stop(second.app);

    const third = await start(home);
    // The start's catch-up finds nothing, and neither does another pass now.
    expect(await third.app.scheduler.runDue()).toBe(0);
    await quiet(third.app, "console");
    expect(third.channel.sent).toEqual([]);
    expect(runsOf(home)).toHaveLength(1);
  });

  it("runs a recurring job once for the slots missed while down, then keeps its grid", async () => {
    const home = tempHome();
    const fast = (config: Parameters<NonNullable<Parameters<typeof testApp>[3]>>[0]) => {
      config.cron.minEverySeconds = 1;
    };
    scriptModel(() => ({
      toolCalls: [{ name: "cron", arguments: { action: "add", message: "stretch", every_seconds: 1 } }],
    }));
    const first = await start(home, fast);
    await first.app.bus.publishInbound(userMessage("desk", "every second tell me to stretch"));
    await first.channel.waitFor(3); // the confirmation and two runs
    await stop(first.app);
    const before = runsOf(home);
    const store = async () => {
      const db = openDatabase(databasePath(home));
      try {
        return (await openSqliteStore(db).jobs.listAll())[0];
      } finally {
        db.close();
      }
    };
    const missedFrom = (await store()).nextRunAt;

    // Three or more slots pass while pincer is down: time itself is the input here, with no process to watch.
    await sleep(3500);
    const restartedAt = Date.now();
    const second = await start(home, fast);
    await second.channel.waitFor(2);
    await stop(second.app);

    const after = runsOf(home).slice(before.length);
    const period = 1000;
    // One run for the whole missed stretch (for its first slot), then the next slot after the restart.
    expect(after[0].scheduledAt).toBe(missedFrom);
    expect(after[1].scheduledAt).toBeGreaterThan(restartedAt);
    expect(after[1].scheduledAt - after[0].scheduledAt).toBeGreaterThanOrEqual(3 * period);
    expect((after[1].scheduledAt - missedFrom) % period).toBe(0);
    // Before the restart, runs went out on the grid too.
    expect((before[1].scheduledAt - before[0].scheduledAt) % period).toBe(0);
  });

  it("does not deliver a job removed by the owner from the command line while the daemon runs", async () => {
    const home = tempHome();
    // Far enough ahead that a busy machine removes it before it is due; the test waits past that time.
    let dueAt = 0;
    scriptModel(() => {
      dueAt = Date.now() + 4000;
      return {
        toolCalls: [
          {
            name: "cron",
            arguments: { action: "add", message: "water the plants", at: new Date(dueAt).toISOString() },
          },
        ],
      };
    });
    const { app, channel } = await start(home);
    await app.bus.publishInbound(userMessage("garden", "remind me soon to water the plants"));
    await channel.waitFor(1);
    const id = /Scheduled job ([0-9a-f]{8})/.exec(channel.sent[0].text)?.[1] ?? "";

    // `pincer cron remove ID` is another process with its own connection to the database.
    const cli = openDatabase(join(home, "pincer.db"));
    expect((await jobCommand(openSqliteStore(cli), "remove", id)).ok).toBe(true);
    cli.close();

    await controlJob(app, dueAt);
    await channel.waitFor(2);
    await quiet(app, "console");
    expect(channel.sent.map((m) => m.chatId)).toEqual(["garden", "control"]);
    expect(runsOf(home).map((r) => r.text)).toEqual([expect.stringContaining("control")]);
  });

  it("removes a job through the tool, only in the conversation that owns it", async () => {
    const home = tempHome();
    let step = 0;
    // Due after the three turns below even on a busy machine; the test then waits past that time.
    let dueAt = 0;
    scriptModel((text) => {
      step++;
      if (step === 1) {
        dueAt = Date.now() + 6000;
        return {
          toolCalls: [
            { name: "cron", arguments: { action: "add", message: "pizza", at: new Date(dueAt).toISOString() } },
          ],
        };
      }
      const id = /job ([0-9a-f]{8})/.exec(text)?.[1];
      return { toolCalls: [{ name: "cron", arguments: { action: "remove", job_id: id } }] };
    });
    const { app, channel } = await start(home);
    await app.bus.publishInbound(userMessage("a", "remind me about the pizza"));
    await channel.waitFor(1);
    const id = /Scheduled job ([0-9a-f]{8})/.exec(channel.sent[0].text)?.[1];
    await app.bus.publishInbound(userMessage("b", `cancel job ${id}`));
    await channel.waitFor(2);
    expect(channel.sent[1]).toMatchObject({ chatId: "b" });
    expect(channel.sent[1].text).toMatch(/^done: Error: no job/);
    await app.bus.publishInbound(userMessage("a", `cancel job ${id}`));
    await channel.waitFor(3);
    expect(channel.sent[2].text).toMatch(/^done: Removed job/);
    await controlJob(app, dueAt);
    await channel.waitFor(4);
    await quiet(app, "console");
    expect(channel.sent.map((m) => m.chatId)).toEqual(["a", "b", "a", "control"]);
  });
});
