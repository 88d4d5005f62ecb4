import { afterEach, describe, expect, it } from "vitest";
import type { ButtonTap, OutboundMessage, TapAnswer } from "../../src/bus/types.js";
import type { FakeUser } from "../../test/fakes/discord-server.js";
import { startDiscordHarness } from "../../test/helpers/discord.js";

const GUILD = "110000000000000001";
const GENERAL = "120000000000000001";
const THREAD = "130000000000000001";
const DM = "140000000000000001";
const ALICE: FakeUser = { id: "200000000000000001", username: "alice" };
const MALLORY: FakeUser = { id: "200000000000000002", username: "mallory" };

const cleanups: Array<() => Promise<void> | void> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const to = (chatId: string, text: string, extra: Partial<OutboundMessage> = {}): OutboundMessage => ({
  channel: "discord",
  chatId,
  text,
  kind: "notice",
  ...extra,
});

async function start(answer: (tap: ButtonTap) => Promise<TapAnswer>, allowedChannels: string[] = []) {
  const h = await startDiscordHarness(cleanups, {
    allowFrom: ALICE.id,
    adjust: (config) => (config.discord.allowedChannels = allowedChannels),
    fake: {
      guilds: [
        {
          id: GUILD,
          name: "home",
          channels: [{ id: GENERAL, name: "general" }],
          threads: [{ id: THREAD, name: "a thread", parentId: GENERAL }],
        },
      ],
    },
  });
  const taps: ButtonTap[] = [];
  h.app.bus.onTap(async (tap) => {
    taps.push(tap);
    return answer(tap);
  });
  return { ...h, taps };
}

describe("Discord channel: buttons, taps and edits", () => {
  it("puts buttons under the last chunk; a tap reaches the bus with its label and gets an ephemeral answer", async () => {
    const { app, discord, taps } = await start(async (tap) => ({ text: tap.data === "b:0" ? "Noted" : undefined }));
    const buttons = [
      [
        { label: "**Yes** <@everyone> 👍", data: "b:0" },
        { label: "No", data: "b:1" },
      ],
    ];
    const outcome = await app.bus.publishOutbound(
      to(DM, `${"word ".repeat(500)}\n\n${"more ".repeat(200)}`, { buttons }),
    );
    expect(outcome.status).toBe("sent");
    expect(discord.sent.length).toBeGreaterThan(1);
    expect(discord.sent.slice(0, -1).every((m) => m.components === undefined)).toBe(true);
    const last = discord.sent.at(-1)!;
    expect(last.components?.[0].components.map((b) => [b.label, b.custom_id])).toEqual([
      ["**Yes** <@everyone> 👍", "b:0"],
      ["No", "b:1"],
    ]);

    const yes = discord.tap(last, "**Yes** <@everyone> 👍", ALICE);
    const no = discord.tap(last, "No", ALICE);
    await discord.waitFor(() => discord.interactions.get(no) && discord.interactions.get(yes));
    expect(discord.interactions.get(yes)).toMatchObject({ type: 4, content: "Noted", flags: 64 });
    expect(discord.interactions.get(no)).toMatchObject({ type: 6 });
    expect(taps.find((t) => t.id === yes)).toMatchObject({
      id: yes,
      channel: "discord",
      chatId: DM,
      senderId: ALICE.id,
      isGroup: false,
      messageId: last.id,
      data: "b:0",
      label: "**Yes** <@everyone> 👍",
    });
  });

  it("reports a tap in a thread as the thread's conversation, and answers a failing or slow handler in time", async () => {
    const { app, discord, taps } = await start(async (tap) => {
      if (tap.data === "b:boom") throw new Error("the store is away");
      await new Promise((r) => setTimeout(r, 2800));
      return { text: "Took a while" };
    });
    await app.bus.publishOutbound(
      to(GENERAL, "pick", {
        threadId: THREAD,
        buttons: [
          [
            { label: "Boom", data: "b:boom" },
            { label: "Slow", data: "b:slow" },
          ],
        ],
      }),
    );
    const [posted] = discord.sent;
    expect(posted.channelId).toBe(THREAD);
    const boom = discord.tap(posted, "Boom", MALLORY);
    await discord.waitFor(() => discord.interactions.get(boom));
    expect(discord.interactions.get(boom)).toMatchObject({ type: 4, content: "Something went wrong.", flags: 64 });
    const late = discord.tap(posted, "Slow", MALLORY);
    const answer = await discord.waitFor(
      () => discord.interactions.get(late)?.followUps[0] && discord.interactions.get(late),
    );
    expect(answer).toMatchObject({ type: 6, followUps: [{ content: "Took a while", flags: 64 }] });
    expect(answer.afterMs).toBeLessThan(3000);
    expect(taps.map((t) => [t.chatId, t.threadId, t.isGroup, t.senderId])).toEqual([
      [GENERAL, THREAD, true, MALLORY.id],
      [GENERAL, THREAD, true, MALLORY.id],
    ]);
  }, 20_000);

  it("acts on a tap in a listed thread (discord.allowedChannels), and only answers one elsewhere", async () => {
    const { app, discord, taps } = await start(async () => ({ text: "Noted" }), [THREAD]);
    const buttons = [[{ label: "Go", data: "b:0.0" }]];
    await app.bus.publishOutbound(to(GENERAL, "in the thread", { threadId: THREAD, buttons }));
    await app.bus.publishOutbound(to(GENERAL, "in the channel", { buttons }));
    const [inThread, inChannel] = discord.sent;
    const listed = discord.tap(inThread, "Go", ALICE);
    const unlisted = discord.tap(inChannel, "Go", ALICE);
    await discord.waitFor(() => discord.interactions.get(listed) && discord.interactions.get(unlisted));
    expect(discord.interactions.get(listed)).toMatchObject({ type: 4, content: "Noted" });
    expect(discord.interactions.get(unlisted)).toMatchObject({ type: 6 });
    expect(taps.map((t) => t.id)).toEqual([listed]);
  });

  it("edits an earlier row in place (content and buttons; none removes them) and refuses a deleted one once", async () => {
    const { app, discord } = await start(async () => ({}));
    const first = await app.bus.publishOutbound(
      to(DM, "Run `ls`?", { buttons: [[{ label: "Deny", data: "a:1:deny" }]] }),
    );
    const edited = await app.bus.publishOutbound(to(DM, "Denied by alice", { editOf: { outboxId: first.outboxId! } }));
    const [message] = discord.sent;
    expect(edited).toMatchObject({ status: "sent", messageIds: [message.id] });
    expect(discord.sent).toHaveLength(1);
    expect(message.edits).toEqual(["Denied by alice"]);
    expect(message.components).toBeUndefined();
    await app.bus.publishOutbound(
      to(DM, "Again?", { editOf: { messageId: message.id }, buttons: [[{ label: "Yes", data: "b:0" }]] }),
    );
    expect(message.components?.[0].components[0]).toMatchObject({ label: "Yes", custom_id: "b:0" });

    message.deleted = true;
    const gone = await app.bus.publishOutbound(to(DM, "too late", { editOf: { outboxId: first.outboxId! } }));
    expect(gone).toMatchObject({ status: "refused", error: expect.stringContaining("Unknown Message") });
    expect(discord.calls.filter((c) => c.method === "PATCH")).toHaveLength(3);
    expect((await app.bus.publishOutbound(to(DM, "still here"))).status).toBe("sent");
  });
});
