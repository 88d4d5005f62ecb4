import { afterEach, describe, expect, it } from "vitest";
import type { FakeUser } from "./fakes/discord-server.js";
import { startDiscordHarness } from "./helpers/discord.js";

/** Replies shown as they are written on Discord: real discord.js against the fake REST API and gateway. */

const DM = "140000000000000001";
const ALICE: FakeUser = { id: "200000000000000001", username: "alice" };
const ANSWER = "Here is **the plan**: first we look, then we act, and then we look again to be sure.";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe("streamed replies on Discord", () => {
  it("shows a DM's first words while the model still writes, then edits that message into the reply", async () => {
    const { discord, model, app } = await startDiscordHarness(cleanups, {
      allowFrom: ALICE.id,
      adjust: (config) => {
        config.agent.streamReplies = "private";
      },
    });
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    model.enqueue({ content: ANSWER, holdAfter: { chunks: 4, until: held } });
    const asked = discord.dispatchMessage({ channelId: DM, author: ALICE, content: "what is the plan?" });
    // The model's stream is held: what shows now was shown before it finished.
    const draft = await discord.waitFor(() => discord.sent.find((m) => m.replyTo === asked.id));
    expect(ANSWER.startsWith(draft.content)).toBe(true);
    release();
    await discord.waitFor(() => draft.edits?.at(-1) === ANSWER);
    await discord.waitFor(async () => (await app.store.journal.pendingOutbound("discord")).length === 0);
    expect(discord.sent.filter((m) => m.channelId === DM)).toHaveLength(1);
    expect(draft.deleted).toBeFalsy();
    // The draft's own calls (all but the reply's edit, which may follow at once) kept the pace.
    const calls = discord.calls.filter((c) => ["POST", "PATCH"].includes(c.method) && c.path.includes("/messages"));
    for (let i = 1; i < calls.length - 1; i++) expect(calls[i].at - calls[i - 1].at).toBeGreaterThanOrEqual(995);
  });
});
