import { afterEach, describe, expect, it } from "vitest";
import type { ButtonTap, OutboundMessage } from "../../src/bus/types.js";
import { groupChat, message, startTelegramHarness, type TelegramHarness, user } from "../../test/helpers/telegram.js";

let h: TelegramHarness | undefined;

afterEach(async () => {
  await h?.close();
  h = undefined;
});

const to = (chatId: string, text: string, extra: Partial<OutboundMessage> = {}): OutboundMessage => ({
  channel: "telegram",
  chatId,
  text,
  kind: "notice",
  ...extra,
});

async function withTaps(
  answer: (tap: ButtonTap) => Promise<{ text?: string }> = async () => ({ text: "Noted" }),
  allowedGroups: string[] = [],
) {
  h = await startTelegramHarness({ adjust: (config) => (config.telegram.allowedGroups = allowedGroups) });
  const taps: ButtonTap[] = [];
  h.app.bus.onTap(async (tap) => {
    taps.push(tap);
    return answer(tap);
  });
  return { h, taps };
}

describe("telegram channel: buttons, taps and edits", () => {
  it("puts the keyboard under the last part, and a tap reaches the bus with its label and is answered", async () => {
    const { h, taps } = await withTaps();
    const long = `${"word ".repeat(1000)}\n\n${"more ".repeat(600)}`;
    const buttons = [[{ label: "<b>Yes</b> 👍", data: "b:0" }], [{ label: "No", data: "b:1" }]];
    const outcome = await h.app.bus.publishOutbound(to("42", long, { buttons }));
    expect(outcome.status).toBe("sent");
    const sent = h.telegram.sent;
    expect(sent.length).toBeGreaterThan(1);
    expect(sent.slice(0, -1).every((m) => m.keyboard === undefined)).toBe(true);
    const last = sent.at(-1)!;
    expect(last.keyboard?.map((row) => row.map((b) => b.text))).toEqual([["<b>Yes</b> 👍"], ["No"]]);

    const id = h.telegram.tap(last, "<b>Yes</b> 👍", user(42, "Ann"));
    await h.telegram.waitFor(() => h.telegram.answers.get(id));
    expect(h.telegram.answers.get(id)).toEqual({ text: "Noted" });
    expect(taps).toEqual([
      expect.objectContaining({
        id,
        channel: "telegram",
        chatId: "42",
        senderId: "42",
        senderName: "Ann",
        isGroup: false,
        messageId: String(last.messageId),
        data: "b:0",
        label: "<b>Yes</b> 👍",
      }),
    ]);
  });

  it("answers every tap, also when the handler throws, and reports the chat the message is in", async () => {
    const { h, taps } = await withTaps(async (tap) => {
      if (tap.data === "b:boom") throw new Error("the store is away");
      return { text: "é".repeat(300) };
    });
    const group = groupChat(-1007);
    // A group message the bot posted (the group is known to the fake from an earlier update).
    h.telegram.pushUpdate(message(group, user(42), { text: "talking among ourselves" }));
    await h.app.bus.publishOutbound(
      to("-1007", "pick", {
        buttons: [
          [
            { label: "Boom", data: "b:boom" },
            { label: "Fine", data: "b:ok" },
          ],
        ],
      }),
    );
    const [posted] = h.telegram.sent;
    const boom = h.telegram.tap(posted, "Boom", user(7, "Stranger"));
    const fine = h.telegram.tap(posted, "Fine", user(7, "Stranger"));
    await h.telegram.waitFor(() => h.telegram.answers.get(fine));
    expect(h.telegram.answers.get(boom)).toEqual({ text: "Something went wrong." });
    // Telegram shows at most 200 characters of an answer (more is refused): cut to fit.
    expect(h.telegram.answers.get(fine)).toEqual({ text: "é".repeat(200) });
    expect(taps.map((t) => [t.chatId, t.isGroup, t.senderId])).toEqual([
      ["-1007", true, "7"],
      ["-1007", true, "7"],
    ]);
    expect(h.logs.some((l) => l.msg === "a button press failed")).toBe(true);
  });

  it("does not act on a tap in a group outside telegram.allowedGroups, but still answers it", async () => {
    const { h, taps } = await withTaps(undefined, ["-1001"]);
    h.telegram.pushUpdate(message(groupChat(-1009), user(42), { text: "elsewhere" }));
    await h.app.bus.publishOutbound(to("-1009", "old", { buttons: [[{ label: "Go", data: "b:0.0" }]] }));
    const id = h.telegram.tap(h.telegram.sent[0], "Go", user(42));
    await h.telegram.waitFor(() => h.telegram.answers.get(id));
    expect(taps).toEqual([]);
  });

  it("shows hostile buttons safely: data over 64 bytes and empty labels left out, long labels cut, the text still sent", async () => {
    const { h } = await withTaps();
    const buttons = [
      [
        { label: "x".repeat(2048), data: "b:0" },
        { label: "", data: "b:1" },
        { label: "too much data", data: "b:".padEnd(65, "x") },
      ],
      [{ label: "   ", data: "b:3" }],
    ];
    expect((await h.app.bus.publishOutbound(to("42", "<i>hi</i> & bye", { buttons }))).status).toBe("sent");
    const [posted] = h.telegram.sent;
    expect(posted.text).toBe("<i>hi</i> & bye");
    expect(posted.keyboard).toEqual([[{ text: "x".repeat(64), callback_data: "b:0" }]]);
  });

  it("edits an earlier row in place with the same formatting and removes its keyboard, also after a restart", async () => {
    const { h } = await withTaps();
    const first = await h.app.bus.publishOutbound(
      to("42", "Run `ls`?", { buttons: [[{ label: "Deny", data: "a:1:deny" }]] }),
    );
    await h.restartChannel();
    const edited = await h.app.bus.publishOutbound(
      to("42", "**Denied** by Ann", { editOf: { outboxId: first.outboxId! } }),
    );
    expect(edited).toMatchObject({ status: "sent", messageIds: [String(h.telegram.sent[0].messageId)] });
    const [message] = h.telegram.sent;
    expect(h.telegram.sent).toHaveLength(1);
    expect(message.edits).toEqual(["Denied by Ann"]);
    expect(message.keyboard).toBeUndefined();
    expect(h.telegram.callsTo("editMessageText")[0].params).toMatchObject({
      text: "<b>Denied</b> by Ann",
      parse_mode: "HTML",
    });
    // The same edit again changes nothing: Telegram's "message is not modified" counts as done.
    const again = await h.app.bus.publishOutbound(
      to("42", "**Denied** by Ann", { editOf: { outboxId: first.outboxId! } }),
    );
    expect(again.status).toBe("sent");
    // A new keyboard on an edit replaces the old one.
    await h.app.bus.publishOutbound(
      to("42", "Again?", { editOf: { outboxId: first.outboxId! }, buttons: [[{ label: "Yes", data: "b:0" }]] }),
    );
    expect(message.keyboard).toEqual([[{ text: "Yes", callback_data: "b:0" }]]);
  });

  it("refuses an edit of a deleted message, a file, or a message pincer never sent, once and without retrying", async () => {
    const { h } = await withTaps();
    const first = await h.app.bus.publishOutbound(to("42", "soon gone"));
    await h.app.bus.publishOutbound({ ...to("42", ""), kind: "progress", text: "" });
    await h.app.bus.publishOutbound(to("42", `${"x".repeat(33_000)}`));
    const file = h.telegram.sent[1];
    h.telegram.sent[0].deleted = true;
    const gone = await h.app.bus.publishOutbound(to("42", "edited", { editOf: { outboxId: first.outboxId! } }));
    expect(gone).toMatchObject({ status: "refused", error: expect.stringContaining("message to edit not found") });
    const notText = await h.app.bus.publishOutbound(
      to("42", "edited", { editOf: { messageId: String(file.messageId) } }),
    );
    expect(notText).toMatchObject({ status: "refused", error: expect.stringContaining("no text in the message") });
    const never = await h.app.bus.publishOutbound(to("42", "edited", { editOf: { outboxId: 99_999 } }));
    expect(never).toMatchObject({ status: "refused", error: expect.stringContaining("never posted") });
    const bogus = await h.app.bus.publishOutbound(to("42", "edited", { editOf: { messageId: "abc" } }));
    expect(bogus.status).toBe("refused");
    expect(h.telegram.callsTo("editMessageText")).toHaveLength(2);
    // The chat's next message is not held up behind them.
    expect((await h.app.bus.publishOutbound(to("42", "still here"))).status).toBe("sent");
  });
});
