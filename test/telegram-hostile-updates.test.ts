import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tempHome } from "./helpers/app.js";
import { gatewayOnFakes, USER } from "./helpers/daemon.js";
import { hasPostgres, startPostgres, type TestPostgres } from "./helpers/postgres.js";

/**
 * Hostile updates through the real daemon's own getUpdates loop: one whose handling fails the
 * same way every time (not the database being away) must be skipped, never retried ahead of
 * every other chat's updates.
 */

const fakes = gatewayOnFakes();
const { model, gateway, say, until } = fakes;

describe.skipIf(!hasPostgres())("telegram getUpdates loop on PostgreSQL, hostile updates", () => {
  let server: TestPostgres | undefined;
  beforeAll(async () => {
    server = await startPostgres();
  }, 60_000);
  afterAll(() => server?.stop());

  it("a stranger whose name holds a NUL (PostgreSQL refuses it every time) does not wedge the bot", async () => {
    const url = await (server as TestPostgres).newDatabase();
    model.respond((request) => ({ content: `You said: ${String(request.messages.at(-1)?.content ?? "")}` }));
    gateway(tempHome(), { PINCER_DATABASE_URL: url });
    say("first");
    await until(() => fakes.telegram.sent.find((m) => m.text === "You said: first"), "the first answer", 30_000);
    const STRANGER = 777;
    fakes.telegram.pushUpdate({
      message: {
        message_id: 0,
        date: 0,
        chat: { id: STRANGER, type: "private", first_name: "E\u0000ve" },
        from: { id: STRANGER, is_bot: false, first_name: "E\u0000ve" },
        text: "let me in",
      },
    });
    say("second");
    await until(
      () => fakes.telegram.sent.find((m) => m.text === "You said: second"),
      "the owner's next answer",
      20_000,
    );
    expect(fakes.telegram.sent.filter((m) => m.chatId === String(USER))).toHaveLength(2);
    // The owner's own NUL reaches the turn (the inbox keeps JSON): the chat goes on after it.
    say("nul \u0000 here");
    say("third");
    await until(() => fakes.telegram.sent.find((m) => m.text === "You said: third"), "the answer after a NUL", 20_000);
  }, 90_000);
});
