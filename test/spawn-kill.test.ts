import { describe, expect, it } from "vitest";
import { databasePath } from "../src/paths.js";
import { openDatabase } from "../src/store/sqlite/database.js";
import { openSqliteStore } from "../src/store/sqlite/sqlite-store.js";
import { tempHome } from "./helpers/app.js";
import { gatewayOnFakes, killHard, USER } from "./helpers/daemon.js";

/** A helper cut short by kill -9 of the built daemon: the next start tells the chat once. */

const fakes = gatewayOnFakes();
const { model, gateway, say, until } = fakes;

async function pendingOutbox(home: string): Promise<number> {
  const db = openDatabase(databasePath(home));
  try {
    return (await openSqliteStore(db).journal.pendingOutbound("telegram")).length;
  } finally {
    db.close();
  }
}

const isHelper = (content: unknown) => String(content).startsWith("You are a background helper");

describe("spawn across kill -9", () => {
  it("marks the helper interrupted and tells the chat exactly once", async () => {
    model.respond((request) => {
      if (isHelper(request.messages[0]?.content)) return { content: "never arrives", delayMs: 60_000 };
      const last = request.messages.at(-1);
      if (last?.role === "tool") return { content: "A helper is on it." };
      const text = String(last?.content ?? "");
      if (text.startsWith("[system: helper]"))
        return { content: `NOTICE ${text.includes("restarted") ? "restart" : "?"}` };
      if (text === "ping") return { content: "pong" };
      return { toolCalls: [{ name: "spawn", arguments: { task: "count the stars", label: "stars" } }] };
    });
    const home = tempHome();
    const first = gateway(home);
    say("count the stars, take your time");
    await until(() => fakes.telegram.sent.find((m) => m.text === "A helper is on it."), "the spawn's answer", 20_000);
    await until(() => model.requests.some((r) => isHelper(r.messages[0]?.content)), "the helper's model call");
    await killHard(first);

    const second = gateway(home);
    const notice = await until(
      () => fakes.telegram.sent.find((m) => m.text.startsWith("NOTICE")),
      "the notice",
      20_000,
    );
    expect(notice).toMatchObject({ chatId: String(USER), text: "NOTICE restart" });
    // Killed only once the outbox knows the notice went out: a kill between Telegram's answer and
    // that mark would resend it (at-least-once delivery, the outbox's business, not the helpers').
    await until(async () => (await pendingOutbox(home)) === 0, "the outbox to mark the notice sent");
    await killHard(second);

    const third = gateway(home);
    say("ping");
    await until(
      () => fakes.telegram.sent.find((m) => m.text === "pong"),
      "the answer after the second restart",
      20_000,
    );
    await killHard(third);
    expect(fakes.telegram.sent.filter((m) => m.text.startsWith("NOTICE"))).toHaveLength(1);
    // The interrupted helper was reported in one turn, not once per start.
    expect(
      model.requests.filter((r) => String(r.messages.at(-1)?.content).startsWith("[system: helper]")),
    ).toHaveLength(1);
    const db = openDatabase(databasePath(home));
    try {
      expect((await openSqliteStore(db).helperRuns.recent(5)).map((r) => [r.label, r.status])).toEqual([
        ["stars", "interrupted"],
      ]);
    } finally {
      db.close();
    }
  });
});
