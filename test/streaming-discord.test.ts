import { afterEach, describe, expect, it } from "vitest";
import type { FakeUser } from "./fakes/discord-server.js";
import { startDiscordHarness } from "./helpers/discord.js";

/** Replies shown as they are written on Discord: real discord.js against the fake REST API and gateway. */

const DM = "140000000000000001";
const GUILD = "110000000000000001";
const GENERAL = "120000000000000001";
const THREAD = "130000000000000001";
const ALICE: FakeUser = { id: "200000000000000001", username: "alice" };
const ANSWER = "Here is **the plan**: first we look, then we act, and then we look again to be sure.";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

type Harness = Awaited<ReturnType<typeof startDiscordHarness>>;

/** An endpoint's first reply after a start is not streamed (it shows whether the template opens <think>): one first. */
async function firstReply({ discord, model, app }: Harness): Promise<void> {
  model.enqueue({ content: "ready" });
  discord.dispatchMessage({ channelId: DM, author: ALICE, content: "hello" });
  await discord.waitFor(() => discord.sent[0]);
  await discord.waitFor(async () => (await app.store.journal.pendingOutbound("discord")).length === 0);
  for (const list of [discord.sent, discord.calls, model.requests]) list.length = 0;
}

describe("streamed replies on Discord", () => {
  it("shows a DM's first words while the model still writes, then edits that message into the reply", async () => {
    const harness = await startDiscordHarness(cleanups, {
      allowFrom: ALICE.id,
      adjust: (config) => {
        config.agent.streamReplies = "private";
      },
    });
    await firstReply(harness);
    const { discord, model, app } = harness;
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
    // The draft's own calls (all but the reply's edit, which may follow at once) kept the pace; 900 ms,
    // not 1000: a call's arrival here varies with the machine's load, an unpaced draft calls far more often.
    const calls = discord.calls.filter((c) => ["POST", "PATCH"].includes(c.method) && c.path.includes("/messages"));
    for (let i = 1; i < calls.length - 1; i++) expect(calls[i].at - calls[i - 1].at).toBeGreaterThanOrEqual(900);
  });
  it("in a thread: the draft is posted in the thread replying to the user, and edited into the reply there", async () => {
    const harness = await startDiscordHarness(cleanups, {
      allowFrom: ALICE.id,
      fake: {
        guilds: [
          {
            id: GUILD,
            name: "home",
            channels: [{ id: GENERAL, name: "general" }],
            threads: [{ id: THREAD, name: "plans", parentId: GENERAL }],
          },
        ],
      },
      adjust: (config) => {
        config.agent.streamReplies = "all";
      },
    });
    await firstReply(harness);
    const { discord, model, app, mention } = harness;
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    model.enqueue({ content: ANSWER, holdAfter: { chunks: 4, until: held } });
    const asked = discord.dispatchMessage({
      channelId: THREAD,
      guildId: GUILD,
      author: ALICE,
      content: `${mention} what is the plan?`,
    });
    const draft = await discord.waitFor(() => discord.sent.find((m) => m.replyTo === asked.id));
    expect(draft.channelId).toBe(THREAD);
    expect(ANSWER.startsWith(draft.content)).toBe(true);
    release();
    await discord.waitFor(() => draft.edits?.at(-1) === ANSWER, 15_000);
    await discord.waitFor(async () => (await app.store.journal.pendingOutbound("discord")).length === 0);
    // One message in all, in the thread; nothing in the parent channel; every edit is of the draft.
    expect(discord.sent).toEqual([draft]);
    expect(draft.deleted).toBeFalsy();
    const edits = discord.calls.filter((c) => c.method === "PATCH" && c.path.includes("/messages/"));
    expect(edits.length).toBeGreaterThan(0);
    for (const e of edits) expect(e.path).toBe(`/channels/${THREAD}/messages/${draft.id}`);
  });
});
