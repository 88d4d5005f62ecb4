import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openPostgresStore } from "../src/store/postgres/postgres-store.js";
import { tempHome } from "./helpers/app.js";
import { gatewayOnFakes, killHard, pincer, USER } from "./helpers/daemon.js";
import { hasPostgres, startPostgres, type TestPostgres } from "./helpers/postgres.js";

/**
 * The built daemon on PostgreSQL (PINCER_DATABASE_URL) against the fake Bot API and model: a
 * conversation, a reminder across kill -9 and the CLI all live in the database, not in PINCER_HOME.
 */

const fakes = gatewayOnFakes();
const { model, gateway, say, until } = fakes;
const SCHEDULER_PREFIX = "[system: scheduler]";

describe.skipIf(!hasPostgres())("pincer gateway on PostgreSQL", () => {
  let server: TestPostgres | undefined;
  beforeAll(async () => {
    server = await startPostgres();
  }, 60_000);
  afterAll(() => server?.stop());

  it("answers, keeps the history, fires a reminder once across kill -9, and the CLI reads the same database", async () => {
    const url = await (server as TestPostgres).newDatabase();
    model.respond((request) => {
      const last = request.messages.at(-1);
      const text = String(last?.content ?? "");
      if (last?.role === "tool") return { content: `Okay. ${text.split("\n")[0]}` };
      if (text.startsWith(SCHEDULER_PREFIX)) return { content: "PIZZA TIME" };
      if (text.includes("remind")) {
        const at = new Date(Date.now() + 3000).toISOString();
        return { toolCalls: [{ name: "cron", arguments: { action: "add", message: "take the pizza out", at } }] };
      }
      return { content: `You said: ${text} (${request.messages.length} messages in view)` };
    });
    const home = tempHome();
    const env = { PINCER_DATABASE_URL: url };
    const first = gateway(home, env);
    say("hello");
    await until(() => fakes.telegram.sent.find((m) => m.text.startsWith("You said: hello")), "the first answer");
    say("again");
    const second = await until(() => fakes.telegram.sent.find((m) => m.text.startsWith("You said: again")), "a second");
    // The first exchange is in the history the model sees (system, hello, its answer, again).
    expect(second.text).toContain("(4 messages in view)");
    say("remind me in 3 seconds");
    await until(() => fakes.telegram.sent.find((m) => m.text.startsWith("Okay.")), "the confirmation");
    // Killed only once the confirmation's delivery is recorded: a kill between Telegram's answer
    // and that write resends it (the Delivery section's one honest exception), which is not under test.
    const watcher = await openPostgresStore(url);
    /** Nothing waits in the inbox or the outbox, and no job is left: nothing could be answered or fired again. */
    const atRest = async () =>
      (await watcher.journal.pendingInbound()).length === 0 &&
      (await watcher.journal.pendingOutbound("telegram")).length === 0 &&
      (await watcher.jobs.listAll()).length === 0;
    try {
      await until(
        async () => (await watcher.journal.pendingOutbound("telegram")).length === 0,
        "the delivery recorded",
      );
      const [job] = await watcher.jobs.listAll();
      await killHard(first);
      // The reminder comes due while pincer is dead: time itself is the input, with no process to watch.
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, job.nextRunAt + 500 - Date.now())));

      gateway(home, env);
      await until(() => fakes.telegram.sent.find((m) => m.text === "PIZZA TIME"), "the reminder", 20_000);
      await until(atRest, "nothing left to run or send");
    } finally {
      await watcher.close();
    }
    expect(fakes.telegram.sent.filter((m) => m.text === "PIZZA TIME")).toHaveLength(1);
    expect(fakes.telegram.sent.filter((m) => m.chatId === String(USER))).toHaveLength(4);

    const status = await pincer(["status"], home, env);
    expect(status.stdout).toMatch(/database: +PostgreSQL at 127\.0\.0\.1:\d+\//);
    expect(status.stdout).not.toContain("pincer.db");
    expect((await pincer(["cron", "list"], home, env)).stdout).toContain("No scheduled jobs.");
    const store = await openPostgresStore(url);
    try {
      expect(await store.conversations.count(`telegram:${USER}`)).toBeGreaterThanOrEqual(6);
      expect(await store.journal.pendingInbound()).toEqual([]);
    } finally {
      await store.close();
    }
  }, 90_000);
});
