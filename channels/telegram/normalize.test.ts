import type { Message } from "grammy/types";
import { describe, expect, it } from "vitest";
import { normalizeMessage, stripBotName } from "./normalize.js";

const bot = { id: 777, username: "pincer_bot" };
const ann = { id: 42, is_bot: false, first_name: "Ann", last_name: "Lee" };
const group = { id: -100, type: "supergroup", title: "Team" } as const;

function msg(fields: Record<string, unknown>): Message {
  return {
    message_id: 10,
    date: 1,
    chat: { id: 42, type: "private", first_name: "Ann" },
    from: ann,
    ...fields,
  } as Message;
}

describe("normalizeMessage", () => {
  it("reads a private text message", () => {
    expect(normalizeMessage(msg({ text: "hello" }), bot, 1000)).toEqual({
      inbound: {
        id: "10",
        channel: "telegram",
        chatId: "42",
        senderId: "42",
        senderName: "Ann Lee",
        text: "hello",
        media: [],
        replyToId: undefined,
        isGroup: false,
        mentionsBot: false,
        receivedAt: 1000,
        sessionKey: "telegram:42",
      },
      repliesToBot: false,
      isCommand: false,
      attachments: [],
    });
  });

  it("detects mentions of this bot only, and strips its name", () => {
    const text = "@Pincer_Bot please check @other_bot";
    const n = normalizeMessage(
      msg({
        chat: group,
        text,
        entities: [
          { type: "mention", offset: 0, length: 11 },
          { type: "mention", offset: 25, length: 10 },
        ],
      }),
      bot,
    );
    expect(n?.inbound).toMatchObject({ isGroup: true, mentionsBot: true, text: "please check @other_bot" });
    const other = normalizeMessage(
      msg({ chat: group, text: "@other_bot hi", entities: [{ type: "mention", offset: 0, length: 10 }] }),
      bot,
    );
    expect(other?.inbound.mentionsBot).toBe(false);
    const textMention = normalizeMessage(
      msg({
        chat: group,
        text: "Pincer hi",
        entities: [
          { type: "text_mention", offset: 0, length: 6, user: { id: 777, is_bot: true, first_name: "Pincer" } },
        ],
      }),
      bot,
    );
    expect(textMention?.inbound.mentionsBot).toBe(true);
  });

  it("tells commands for this bot from commands for another", () => {
    const command = (text: string) =>
      normalizeMessage(
        msg({ chat: group, text, entities: [{ type: "bot_command", offset: 0, length: text.split(" ")[0].length }] }),
        bot,
      );
    expect(command("/new@pincer_bot")).toMatchObject({ isCommand: true, inbound: { mentionsBot: true, text: "/new" } });
    expect(command("/stop")).toMatchObject({ isCommand: true, inbound: { mentionsBot: false, text: "/stop" } });
    expect(command("/stop@other_bot")).toMatchObject({ isCommand: false, inbound: { mentionsBot: false } });
  });

  it("treats a forum topic as its own thread and ignores the topic's implicit reply", () => {
    const root = { message_id: 5, date: 1, chat: group, from: ann, forum_topic_created: { name: "t", icon_color: 0 } };
    const inTopic = normalizeMessage(
      msg({
        chat: { ...group, is_forum: true },
        text: "x",
        message_thread_id: 5,
        is_topic_message: true,
        reply_to_message: root,
      }),
      bot,
    );
    expect(inTopic).toMatchObject({
      inbound: { sessionKey: "telegram:-100:thread:5", replyToId: undefined },
      repliesToBot: false,
    });
    const botMessage = {
      message_id: 8,
      date: 1,
      chat: group,
      from: { id: 777, is_bot: true, first_name: "P" },
      text: "earlier",
    };
    const replyInTopic = normalizeMessage(
      msg({ chat: group, text: "y", message_thread_id: 5, is_topic_message: true, reply_to_message: botMessage }),
      bot,
    );
    expect(replyInTopic).toMatchObject({
      inbound: { sessionKey: "telegram:-100:thread:5", replyToId: "8" },
      repliesToBot: true,
    });
    // In a plain supergroup a reply thread is not a topic.
    const plainReply = normalizeMessage(
      msg({ chat: group, text: "z", message_thread_id: 8, reply_to_message: botMessage }),
      bot,
    );
    expect(plainReply).toMatchObject({ inbound: { sessionKey: "telegram:-100", replyToId: "8" }, repliesToBot: true });
  });

  it("lists files to download, with the caption as text", () => {
    const n = normalizeMessage(
      msg({
        caption: "see these",
        photo: [
          { file_id: "small", file_unique_id: "s", width: 90, height: 90, file_size: 100 },
          { file_id: "large", file_unique_id: "l", width: 900, height: 900, file_size: 9000 },
        ],
      }),
      bot,
    );
    expect(n?.inbound.text).toBe("see these");
    expect(n?.attachments).toEqual([
      { kind: "photo", fileId: "large", fileName: "photo-10.jpg", fileSize: 9000, label: "photo" },
    ]);
    const voice = normalizeMessage(msg({ voice: { file_id: "v", file_unique_id: "v", duration: 3 } }), bot);
    expect(voice?.attachments[0]).toMatchObject({
      kind: "voice",
      fileName: "voice-10.ogg",
      label: "voice message, 3 s",
    });
    const doc = normalizeMessage(
      msg({ document: { file_id: "d", file_unique_id: "d", file_name: "report.pdf", file_size: 5 } }),
      bot,
    );
    expect(doc?.attachments[0]).toMatchObject({
      kind: "document",
      fileName: "report.pdf",
      label: "document report.pdf",
    });
  });

  it("describes stickers, places, contacts and polls in words", () => {
    expect(normalizeMessage(msg({ sticker: { file_id: "s", emoji: "🙂" } }), bot)?.inbound.text).toBe("[sticker 🙂]");
    expect(normalizeMessage(msg({ location: { latitude: 1.5, longitude: 2.5 } }), bot)?.inbound.text).toBe(
      "[location: 1.5, 2.5]",
    );
    expect(normalizeMessage(msg({ contact: { first_name: "Bo", phone_number: "+1" } }), bot)?.inbound.text).toBe(
      "[contact: Bo, +1]",
    );
    expect(
      normalizeMessage(msg({ poll: { question: "Lunch?", options: [{ text: "yes" }, { text: "no" }] } }), bot)?.inbound
        .text,
    ).toBe("[poll: Lunch? — yes / no]");
  });

  it("skips bots, service messages and empty messages", () => {
    expect(normalizeMessage(msg({ text: "hi", from: { id: 9, is_bot: true, first_name: "B" } }), bot)).toBeUndefined();
    expect(normalizeMessage(msg({ new_chat_members: [ann] }), bot)).toBeUndefined();
    expect(normalizeMessage(msg({ pinned_message: { message_id: 1 } }), bot)).toBeUndefined();
    expect(
      normalizeMessage(msg({ text: "@pincer_bot", entities: [{ type: "mention", offset: 0, length: 11 }] }), bot)
        ?.inbound.text,
    ).toBe("@pincer_bot");
    expect(normalizeMessage(msg({ text: "   " }), bot)).toBeUndefined();
  });
});

describe("stripBotName", () => {
  it("removes the handle wherever it is, with a leading comma", () => {
    expect(stripBotName("@pincer_bot, what's up", "pincer_bot")).toBe("what's up");
    expect(stripBotName("ask @PINCER_BOT now", "pincer_bot")).toBe("ask now");
    expect(stripBotName("@pincer_botany stays", "pincer_bot")).toBe("@pincer_botany stays");
    expect(stripBotName("/model@pincer_bot big", "pincer_bot")).toBe("/model big");
    expect(stripBotName("hi @pincer_bot", "pincer_bot")).toBe("hi");
    expect(stripBotName(" \t@pincer_bot ", "pincer_bot")).toBe("");
  });

  it("keeps every other space and tab: pasted code and YAML keep their indentation (issue 36, point 9)", () => {
    const yaml = "services:\n  web:\n    image: nginx\n    ports:\n      - '80:80'";
    expect(stripBotName(yaml, "pincer_bot")).toBe(yaml);
    expect(stripBotName(`@pincer_bot fix this:\n${yaml}`, "pincer_bot")).toBe(`fix this:\n${yaml}`);
    expect(stripBotName(`@pincer_bot\n\tif x:\n\t\treturn  1`, "pincer_bot")).toBe("\tif x:\n\t\treturn  1");
    expect(stripBotName("a  b\t\tc  @pincer_bot  d", "pincer_bot")).toBe("a  b\t\tc   d");
  });
});
