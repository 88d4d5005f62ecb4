import { afterEach, describe, expect, it } from "vitest";
import type { FakeReply } from "./fakes/openai-server.js";
import { sqliteOf } from "./helpers/app.js";
import { message, privateChat, startTelegramHarness, type TelegramHarness, user } from "./helpers/telegram.js";

/** Progress notes on Telegram: one note per chat, edited in place between tool rounds, removed at the end. */

let h: TelegramHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

function slowTurn(): FakeReply[] {
  return [
    { toolCalls: [{ name: "exec", arguments: { command: "sleep 0.6; echo one" } }] },
    { toolCalls: [{ name: "exec", arguments: { command: "sleep 0.6; echo two" } }] },
    { content: "All done." },
  ];
}

describe("progress notes", () => {
  it("shows a note for a slow tool round, edits it in place for the next, and deletes it when the answer comes", async () => {
    h = await startTelegramHarness({
      adjust: (config) => {
        config.progress.afterSeconds = 0.2;
      },
    });
    h.model.enqueue(...slowTurn());
    h.telegram.pushUpdate(message(privateChat(42), user(42), { text: "run the two steps" }));
    const answer = await h.telegram.waitFor(() => h?.telegram.sent.find((m) => m.text === "All done."), 10_000);
    const note = await h.telegram.waitFor(() => h?.telegram.sent.find((m) => m.text.startsWith("⏳") && m.deleted));
    expect(note.text).toBe("⏳ Working: exec `sleep 0.6; echo one`");
    expect(note.edits).toEqual(["⏳ Working: exec `sleep 0.6; echo two`"]);
    // One note message in all: edited, not a new message per round.
    expect(h.telegram.sent.filter((m) => m.text.startsWith("⏳"))).toHaveLength(1);
    expect(h.telegram.callsTo("editMessageText")).toHaveLength(1);
    expect(answer.replyToId).toBeDefined();
    // Progress notes are not kept in the outbox: nothing would be resent after a restart.
    const rows = sqliteOf(h.app).prepare("SELECT payload FROM outbox").pluck().all() as string[];
    expect(rows.some((p) => p.includes("⏳"))).toBe(false);

    // A quick tool round shows no note at all.
    h.model.enqueue({ toolCalls: [{ name: "list_dir", arguments: {} }] }, { content: "Quick." });
    h.telegram.pushUpdate(message(privateChat(42), user(42), { text: "list" }));
    await h.telegram.waitFor(() => h?.telegram.sent.find((m) => m.text === "Quick."));
    expect(h.telegram.sent.filter((m) => m.text.startsWith("⏳"))).toHaveLength(1);
  });

  it("shows nothing when turned off", async () => {
    h = await startTelegramHarness({
      adjust: (config) => {
        config.progress.enabled = false;
      },
    });
    h.model.enqueue(...slowTurn());
    h.telegram.pushUpdate(message(privateChat(42), user(42), { text: "run the two steps" }));
    await h.telegram.waitFor(() => h?.telegram.sent.find((m) => m.text === "All done."), 10_000);
    h.model.enqueue({ toolCalls: [{ name: "list_dir", arguments: {} }] }, { content: "Quick." });
    h.telegram.pushUpdate(message(privateChat(42), user(42), { text: "list" }));
    await h.telegram.waitFor(() => h?.telegram.sent.find((m) => m.text === "Quick."));
    expect(h.telegram.sent.map((m) => m.text)).toEqual(["All done.", "Quick."]);
    expect(h.telegram.callsTo("editMessageText")).toHaveLength(0);
  });

  it("posts a fresh note when the old one was deleted by someone", async () => {
    h = await startTelegramHarness({
      adjust: (config) => {
        config.progress.afterSeconds = 0.2;
      },
    });
    h.telegram.failNext("editMessageText", { status: 400, description: "Bad Request: message to edit not found" });
    h.model.enqueue(...slowTurn());
    h.telegram.pushUpdate(message(privateChat(42), user(42), { text: "run the two steps" }));
    await h.telegram.waitFor(() => h?.telegram.sent.find((m) => m.text === "All done."), 10_000);
    const notes = await h.telegram.waitFor(() => {
      const found = h?.telegram.sent.filter((m) => m.text.startsWith("⏳")) ?? [];
      return found.length === 2 && found[1].deleted ? found : undefined;
    });
    expect(notes.map((n) => n.text)).toEqual([
      "⏳ Working: exec `sleep 0.6; echo one`",
      "⏳ Working: exec `sleep 0.6; echo two`",
    ]);
  });
});
