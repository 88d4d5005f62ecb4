import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { conversationMediaDir } from "../../src/bus/types.js";
import { mediaDir } from "../../src/paths.js";
import { tempHome } from "../../test/helpers/app.js";
import {
  groupChat,
  message,
  privateChat,
  startTelegramHarness,
  type TelegramHarness,
  user,
} from "../../test/helpers/telegram.js";

let h: TelegramHarness | undefined;

afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** The last user message the model was shown in request `n`. */
function lastUserText(harness: TelegramHarness, n: number): string {
  const messages = harness.model.requests[n].messages.filter((m) => m.role === "user");
  return String(messages.at(-1)?.content ?? "");
}

describe("telegram channel: conversations", () => {
  it("answers a private message in the same chat, as a formatted reply, and registers its commands", async () => {
    h = await startTelegramHarness();
    h.model.enqueue({ content: "**Hello** there, `Ann`" });
    const update = h.telegram.pushUpdate(message(privateChat(42), user(42, "Ann"), { text: "hi bot" }));

    const sent = await h.telegram.waitFor(() => h?.telegram.sent[0]);
    expect(sent).toMatchObject({ chatId: "42", text: "Hello there, Ann", parseMode: "HTML" });
    expect(sent.replyToId).toBe(update.message?.message_id);
    expect(h.telegram.callsTo("sendMessage")[0].params.text).toBe("<b>Hello</b> there, <code>Ann</code>");
    expect(lastUserText(h, 0)).toBe("hi bot");
    expect(await h.app.store.conversations.count("telegram:42")).toBe(2);

    const commands = h.telegram.callsTo("setMyCommands")[0].params.commands as Array<{ command: string }>;
    expect(commands.map((c) => c.command)).toEqual([
      "new",
      "stop",
      "status",
      "help",
      "model",
      "usage",
      "voice",
      "jobs",
      "whoami",
      "link",
      "unlink",
      "forget",
    ]);
    expect(h.telegram.callsTo("deleteWebhook")).toHaveLength(1);
  });

  it("shows typing… while the turn runs and stops once the reply is sent", async () => {
    h = await startTelegramHarness();
    h.model.enqueue({ content: "done", delayMs: 450 });
    h.telegram.pushUpdate(message(privateChat(42), user(42), { text: "slow question" }));
    const sent = await h.telegram.waitFor(() => h?.telegram.sent[0]);

    const typing = h.telegram.callsTo("sendChatAction").filter((c) => String(c.params.chat_id) === "42");
    expect(typing.length).toBeGreaterThanOrEqual(3);
    expect(typing.every((c) => c.params.action === "typing")).toBe(true);
    expect(typing[0].at).toBeLessThan(sent.at);
    const countAtReply = typing.length;
    await new Promise((r) => setTimeout(r, 350));
    expect(h.telegram.callsTo("sendChatAction").length).toBeLessThanOrEqual(countAtReply + 1);
  });

  it("holds a conversation with tool use", async () => {
    h = await startTelegramHarness();
    h.model.enqueue(
      { toolCalls: [{ name: "write_file", arguments: { path: "notes/todo.txt", content: "buy milk" } }] },
      { content: "Saved it to `notes/todo.txt`." },
    );
    h.telegram.pushUpdate(message(privateChat(42), user(42), { text: "note: buy milk" }));
    const sent = await h.telegram.waitFor(() => h?.telegram.sent[0]);
    expect(sent.text).toBe("Saved it to notes/todo.txt.");
    expect(readFileSync(join(h.app.config.workspace, "notes/todo.txt"), "utf8")).toBe("buy milk");
    const toolResult = h.model.requests[1].messages.find((m) => m.role === "tool");
    expect(String(toolResult?.content)).not.toMatch(/^Error/);
  });

  it("passes commands through as text, without the @botname", async () => {
    h = await startTelegramHarness();
    h.telegram.pushUpdate(message(privateChat(42), user(42), { text: "/help@pincer_test_bot" }));
    const sent = await h.telegram.waitFor(() => h?.telegram.sent[0]);
    expect(sent.text).toContain("/new");
    expect(sent.text).toContain("/status");
    expect(h.model.requests).toHaveLength(0);
  });

  it("in a group answers only when mentioned or replied to", async () => {
    h = await startTelegramHarness({ adjust: (c) => (c.telegram.allowedGroups = ["-1001"]) });
    h.model.respond((req) => ({ content: `echo ${String(req.messages.at(-1)?.content).split("\n").at(-1)}` }));
    const group = groupChat(-1001);
    const ann = user(42, "Ann");
    h.telegram.pushUpdate(message(group, ann, { text: "just chatting among us" }));
    h.telegram.pushUpdate(message(group, ann, { text: "/status@some_other_bot" }));
    h.telegram.pushUpdate(message(groupChat(-1002), ann, { text: "@pincer_test_bot hello from another group" }));
    h.telegram.pushUpdate(message(group, ann, { text: "@pincer_test_bot what is 2+2?" }));
    const first = await h.telegram.waitFor(() => h?.telegram.sent[0]);
    expect(first).toMatchObject({ chatId: "-1001", text: "echo what is 2+2?" });
    expect(h.model.requests).toHaveLength(1);
    expect(lastUserText(h, 0)).toBe("[Ann (id 42)]\nwhat is 2+2?");

    // A reply to the bot's own message counts as addressing it.
    const botMessage = {
      message_id: first.messageId,
      chat: group,
      from: h.telegram.botUser,
      date: 1,
      text: first.text,
    };
    h.telegram.pushUpdate(message(group, ann, { text: "and 3+3?", reply_to_message: botMessage as never }));
    const second = await h.telegram.waitFor(() => h?.telegram.sent[1]);
    expect(second.text).toBe("echo and 3+3?");
    expect(h.model.requests).toHaveLength(2);
    expect(h.telegram.sent.every((m) => m.chatId === "-1001")).toBe(true);
  });

  it("keeps each forum topic its own conversation and answers inside the topic", async () => {
    h = await startTelegramHarness();
    h.model.enqueue({ content: "topic 77 answer" }, { content: "topic 88 answer" });
    const forum = groupChat(-1005, true);
    const ann = user(42, "Ann");
    const topicRoot = (id: number) =>
      ({ message_id: id, chat: forum, date: 1, from: ann, forum_topic_created: { name: "t", icon_color: 1 } }) as never;
    const inTopic = (id: number, text: string) =>
      message(forum, ann, { text, message_thread_id: id, is_topic_message: true, reply_to_message: topicRoot(id) });

    const u1 = h.telegram.pushUpdate(inTopic(77, "@pincer_test_bot remember the word banana"));
    await h.telegram.waitFor(() => h?.telegram.sent[0]);
    h.telegram.pushUpdate(inTopic(88, "@pincer_test_bot which word?"));
    await h.telegram.waitFor(() => h?.telegram.sent[1]);

    expect(h.telegram.sent[0]).toMatchObject({
      threadId: 77,
      replyToId: u1.message?.message_id,
      text: "topic 77 answer",
    });
    expect(h.telegram.sent[1]).toMatchObject({ threadId: 88, text: "topic 88 answer" });
    expect(await h.app.store.conversations.count("telegram:-1005:thread:77")).toBe(2);
    expect(await h.app.store.conversations.count("telegram:-1005:thread:88")).toBe(2);
    expect(JSON.stringify(h.model.requests[1].messages)).not.toContain("banana");
    const typing = h.telegram.callsTo("sendChatAction").map((c) => c.params.message_thread_id);
    expect(typing).toContain(77);
    expect(typing).toContain(88);
  });

  it("gives a stranger one pairing code, makes no model call, and answers once the owner approves", async () => {
    h = await startTelegramHarness({ allowFrom: "42" });
    h.telegram.pushUpdate(message(privateChat(99), user(99, "Eve"), { text: "hello?" }));
    const codeMessage = await h.telegram.waitFor(() => h?.telegram.sent[0]);
    expect(codeMessage.chatId).toBe("99");
    const code = /pairing code is ([A-Z0-9]{8})/.exec(codeMessage.text)?.[1];
    expect(code).toBeDefined();
    expect(codeMessage.text).toContain(`pincer pairing approve telegram ${code}`);

    // Told once: a second message gets no second code. The owner's message proves it was read.
    h.telegram.pushUpdate(message(privateChat(99), user(99, "Eve"), { text: "hello??" }));
    h.telegram.pushUpdate(message(privateChat(42), user(42), { text: "owner here" }));
    await h.telegram.waitFor(() => h?.telegram.sent.find((m) => m.chatId === "42"));
    expect(h.telegram.sent.filter((m) => m.chatId === "99")).toHaveLength(1);
    expect(h.model.requests).toHaveLength(1);
    expect(lastUserText(h, 0)).toBe("owner here");

    expect((await h.app.store.pairing.approve("telegram", code as string))?.user.userId).toBe("99");
    h.telegram.pushUpdate(message(privateChat(99), user(99, "Eve"), { text: "now?" }));
    await h.telegram.waitFor(() => h?.telegram.sent.filter((m) => m.chatId === "99")[1]);
    expect(lastUserText(h, 1)).toBe("now?");
  });
});

describe("telegram channel: the access gate", () => {
  it("gives every stranger of a flood a code in private, the newest included, and never fetches their files", async () => {
    h = await startTelegramHarness({ allowFrom: "42" });
    const strangers = Array.from({ length: 12 }, (_, i) => 100 + i);
    for (const id of strangers) h.telegram.pushUpdate(message(privateChat(id), user(id), { text: "let me in" }));
    const file = h.telegram.addFile("secret", { fileName: "x.bin" });
    h.telegram.pushUpdate(
      message(privateChat(300), user(300), { document: { ...file, file_name: "x.bin" }, caption: "look" }),
    );
    await h.telegram.waitFor(() => h?.telegram.sent.length === 13);
    const codeOf = (chatId: string) =>
      /pairing code is ([A-Z0-9]{8})/.exec(h?.telegram.sent.find((m) => m.chatId === chatId)?.text ?? "")?.[1];
    const codes = strangers.map((id) => codeOf(String(id)));
    expect(codes.every(Boolean)).toBe(true);
    expect(new Set(codes).size).toBe(12);
    expect(codeOf("300")).toBeDefined();
    expect(h.telegram.callsTo("getFile")).toHaveLength(0);
    expect(h.model.requests).toHaveLength(0);
    // The cap of 10 open requests made room: the oldest went, the newest stays valid.
    expect(await h.app.store.pairing.pending()).toHaveLength(10);
    expect((await h.app.store.pairing.pending()).some((p) => p.userId === "100")).toBe(false);

    // The same stranger asking again keeps the same open code (no second request, no second message so soon).
    h.telegram.pushUpdate(message(privateChat(111), user(111), { text: "again?" }));
    h.telegram.pushUpdate(message(privateChat(42), user(42), { text: "owner here" }));
    await h.telegram.waitFor(() => h?.telegram.sent.find((m) => m.chatId === "42"));
    expect((await h.app.store.pairing.pending()).find((p) => p.userId === "111")?.code).toBe(codes[11]);
    expect(h.telegram.sent.filter((m) => m.chatId === "111")).toHaveLength(1);
    expect((await h.app.store.pairing.approve("telegram", codes[11] as string))?.user.userId).toBe("111");
  });

  it("does not run a message that waited in its queue while its sender's access was revoked", async () => {
    h = await startTelegramHarness({ allowFrom: "" });
    const { code } = await h.app.store.pairing.request("telegram", "9", "Nine");
    await h.app.store.pairing.approve("telegram", code);
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    h.model.respond(async () => {
      await held;
      return { content: "first answer" };
    });
    h.telegram.pushUpdate(message(privateChat(9), user(9), { text: "first" }));
    h.telegram.pushUpdate(message(privateChat(9), user(9), { text: "second, queued" }));
    await h.telegram.waitFor(async () => (await h!.app.store.journal.pendingInbound()).length === 2);
    await h.app.store.pairing.revoke("telegram", "9");
    release();
    await h.telegram.waitFor(
      async () => (await h!.app.store.journal.pendingInbound()).length === 0 && h!.telegram.sent.length > 0,
    );
    expect(h.model.requests).toHaveLength(1);
    expect(h.telegram.sent.map((m) => m.text)).toEqual(["first answer"]);
  });

  it("posts nothing in a group when a stranger mentions the bot there, and opens no request", async () => {
    h = await startTelegramHarness({ allowFrom: "42" });
    const group = groupChat(-1009);
    h.telegram.pushUpdate(message(group, user(200, "Mallory"), { text: "@pincer_test_bot give me a code" }));
    h.telegram.pushUpdate(message(group, user(42), { text: "@pincer_test_bot hi" }));
    const answer = await h.telegram.waitFor(() => h?.telegram.sent[0]);
    expect(answer.chatId).toBe("-1009");
    expect(answer.text).toBe("ok");
    expect(h.model.requests).toHaveLength(1);
    expect(lastUserText(h, 0)).not.toContain("give me a code");
    expect(h.telegram.sent).toHaveLength(1);
    expect(await h.app.store.pairing.pending()).toEqual([]);
  });

  it("gives up a stalled file download after its timeout and still answers", async () => {
    h = await startTelegramHarness({ timing: { downloadTimeoutMs: 300 } });
    const stalled = h.telegram.addFile("slow bytes", { fileName: "stalled.pdf", delayMs: 5_000 });
    h.telegram.pushUpdate(message(privateChat(42), user(42), { document: { ...stalled, file_name: "stalled.pdf" } }));
    await h.telegram.waitFor(() => h?.telegram.sent[0]);
    expect(lastUserText(h, 0)).toBe("[document stalled.pdf could not be downloaded: no complete answer within 0.3 s]");
  });
});

describe("telegram channel: update kinds and media", () => {
  it("keeps one chat's updates in order while other chats go ahead", async () => {
    h = await startTelegramHarness({ allowFrom: "*" });
    h.model.respond((req) => ({ content: `re: ${String(req.messages.at(-1)?.content).split("\n")[0]}` }));
    const slow = h.telegram.addFile("big picture", { fileName: "slow.jpg", delayMs: 600 });
    h.telegram.pushUpdate(
      message(privateChat(1), user(1), { caption: "slow photo", photo: [{ ...slow, width: 1, height: 1 }] }),
    );
    h.telegram.pushUpdate(message(privateChat(1), user(1), { text: "after the photo" }));
    h.telegram.pushUpdate(message(privateChat(2), user(2), { text: "other chat" }));
    await h.telegram.waitFor(() => h?.telegram.sent.length === 3 && h.telegram.sent);

    const order = h.telegram.sent.map((m) => `${m.chatId}:${m.text}`);
    // Chat 2 is answered while chat 1 still downloads; chat 1 stays in its own order.
    expect(order[0]).toBe("2:re: other chat");
    expect(order.slice(1)).toEqual(["1:re: slow photo", "1:re: after the photo"]);
  });

  it("answers another chat while one chat's download from an earlier batch is still running", async () => {
    h = await startTelegramHarness({ allowFrom: "*" });
    h.model.respond((req) => ({ content: `re: ${String(req.messages.at(-1)?.content).split("\n")[0]}` }));
    const stalled = h.telegram.addFile("big picture", { fileName: "slow.jpg", delayMs: 30_000 });
    h.telegram.pushUpdate(
      message(privateChat(1), user(1), { caption: "slow photo", photo: [{ ...stalled, width: 1, height: 1 }] }),
    );
    await h.telegram.waitFor(() => h?.telegram.callsTo("getFile").length === 1);
    // Chat 2 writes while chat 1's batch is being handled: it comes in a later getUpdates, which
    // must not wait for chat 1's download (up to a minute per file).
    h.telegram.pushUpdate(message(privateChat(2), user(2), { text: "other chat" }));
    await h.telegram.waitFor(() => h?.telegram.sent.find((m) => m.chatId === "2"), 15_000);
    expect(h.telegram.sent.map((m) => `${m.chatId}:${m.text}`)).toEqual(["2:re: other chat"]);
  });

  it("answers a burst of 100 updates across 50 chats once each, each chat in order", async () => {
    h = await startTelegramHarness({ allowFrom: "*" });
    h.model.respond((req) => ({ content: `re: ${String(req.messages.at(-1)?.content).split("\n")[0]}` }));
    for (let round = 0; round < 2; round++)
      for (let chat = 1; chat <= 50; chat++)
        h.telegram.pushUpdate(message(privateChat(chat), user(chat), { text: `m${round}` }));
    // An update without any chat in the same stream is skipped, not grouped with anything.
    h.telegram.pushUpdate({ poll: { id: "p", question: "?", options: [] } } as never);
    await h.telegram.waitFor(() => h?.telegram.sent.length === 100, 60_000);
    for (let chat = 1; chat <= 50; chat++) {
      const texts = h.telegram.sent.filter((m) => m.chatId === String(chat)).map((m) => m.text);
      expect(texts).toEqual(["re: m0", "re: m1"]);
    }
    await h.telegram.waitFor(() => h?.telegram.pendingUpdates() === 0);
  }, 90_000);

  it("ignores edits, channel posts, button presses and unknown kinds on purpose, and keeps polling", async () => {
    h = await startTelegramHarness();
    const ann = user(42);
    const chat = privateChat(42);
    h.telegram.pushUpdate({
      edited_message: { message_id: 5, chat, from: ann, date: 1, text: "edited", edit_date: 2 } as never,
    });
    h.telegram.pushUpdate({
      channel_post: {
        message_id: 6,
        chat: { id: -1009, type: "channel", title: "News" },
        date: 1,
        text: "post",
      } as never,
    });
    h.telegram.pushUpdate({ callback_query: { id: "cb1", from: ann, chat_instance: "x", data: "old-button" } });
    h.telegram.pushUpdate({
      my_chat_member: {
        chat: groupChat(-1003),
        from: ann,
        date: 1,
        old_chat_member: { status: "left", user: h.telegram.botUser },
        new_chat_member: { status: "member", user: h.telegram.botUser },
      } as never,
    });
    h.telegram.pushUpdate({ some_future_kind: { whatever: true } } as never);
    h.telegram.pushUpdate(message(chat, ann, { new_chat_members: [ann] }));
    h.telegram.pushUpdate(
      message(chat, ann, {
        sticker: {
          file_id: "s1",
          file_unique_id: "s1",
          type: "regular",
          width: 1,
          height: 1,
          is_animated: false,
          is_video: false,
          emoji: "👍",
        },
      }),
    );
    h.telegram.pushUpdate(message(chat, ann, { text: "still there?" }));

    await h.telegram.waitFor(() => h?.telegram.sent[1]);
    expect(h.model.requests).toHaveLength(2);
    expect(lastUserText(h, 0)).toBe("[sticker 👍]");
    expect(lastUserText(h, 1)).toBe("still there?");
    expect(h.telegram.callsTo("answerCallbackQuery").map((c) => c.params.callback_query_id)).toEqual(["cb1"]);
    expect(h.logs.some((l) => l.msg.startsWith("added to a group") && l.chatId === -1003)).toBe(true);
    expect(h.logs.filter((l) => l.msg === "telegram update failed")).toEqual([]);
  });

  it("downloads photos and documents into the media folder and refuses files over the size cap", async () => {
    h = await startTelegramHarness({ adjust: (c) => (c.media.maxBytes = 1000) });
    const photo = h.telegram.addFile("fake-jpeg-bytes", { fileName: "photo.jpg" });
    const doc = h.telegram.addFile("id,name\n1,Ann\n", { fileName: "people.csv" });
    const big = h.telegram.addFile(Buffer.alloc(5000, 1), { fileName: "big.bin" });
    const chat = privateChat(42);
    h.telegram.pushUpdate(
      message(chat, user(42), { caption: "what is this?", photo: [{ ...photo, width: 10, height: 10 }] }),
    );
    h.telegram.pushUpdate(message(chat, user(42), { document: { ...doc, file_name: "people.csv" } }));
    // The size is not in the message: the cap is checked against getFile's answer.
    h.telegram.pushUpdate(
      message(chat, user(42), {
        document: { file_id: big.file_id, file_unique_id: big.file_unique_id, file_name: "big.bin" },
      }),
    );
    await h.telegram.waitFor(() => h?.telegram.sent[2]);

    const first = lastUserText(h, 0);
    // Not a real JPEG: the model is told it could not be read, and the file stays for tools.
    expect(first).toMatch(/^what is this\?\n\[image: (.+)\]\n\[the image .*photo-1\.jpg could not be read: .+\]$/);
    const photoPath = /\[image: (.+)\]/.exec(first)?.[1] as string;
    expect(photoPath.startsWith(mediaDir(h.home))).toBe(true);
    expect(readFileSync(photoPath, "utf8")).toBe("fake-jpeg-bytes");
    const docPath = /\[document (.+), in full/.exec(lastUserText(h, 1))?.[1] as string;
    expect(lastUserText(h, 1)).toContain("\nid,name\n1,Ann\n\n[end of document excerpt]");
    expect(docPath.endsWith("people.csv")).toBe(true);
    expect(readFileSync(docPath, "utf8")).toBe("id,name\n1,Ann\n");
    expect(statSync(docPath).mode & 0o777).toBe(0o600);
    expect(lastUserText(h, 2)).toBe("[document big.bin (4.9 KB) was not downloaded: larger than the 1000 B limit]");
    expect(existsSync(`${mediaDir(h.home)}/telegram-42-3-0-big.bin`)).toBe(false);
  });

  it("copies a self-hosted Bot API's local file only from its files folder, regular and within the size cap", async () => {
    h = await startTelegramHarness({ adjust: (c) => (c.media.maxBytes = 1000) });
    const telegram = h.telegram;
    // As telegram-bot-api --local lays it out: <--dir>/<bot token>/documents/file_N.
    const root = tempHome("pincer-bot-api-");
    const folder = join(root, telegram.token, "documents");
    mkdirSync(folder, { recursive: true });
    writeFileSync(join(folder, "file_0.txt"), "local bytes");
    writeFileSync(join(folder, "file_1.bin"), Buffer.alloc(5000, 1));
    const secret = join(root, "secret.txt");
    writeFileSync(secret, "TOP SECRET");
    symlinkSync(secret, join(folder, "file_2.txt"));
    const cases = [
      join(folder, "file_0.txt"),
      secret,
      "/dev/zero",
      join(folder, "file_2.txt"),
      `${folder}/../../secret.txt`,
      join(folder, "file_1.bin"),
    ];
    const chat = privateChat(42);
    for (const [i, filePath] of cases.entries()) {
      const file = telegram.addFile("", { filePath });
      telegram.pushUpdate(message(chat, user(42), { document: { ...file, file_name: `case${i}.txt` } }));
      await telegram.waitFor(() => telegram.sent[i]);
    }
    const shown = cases.map((_, i) => lastUserText(h as TelegramHarness, i));
    expect(shown[0]).toContain("\nlocal bytes\n");
    const outside = "[document case1.txt could not be downloaded: the Bot API named a file outside its files folder]";
    for (const i of [1, 2, 3, 4]) expect(shown[i]).toBe(outside.replace("case1", `case${i}`));
    expect(shown[5]).toBe("[document case5.txt (4.9 KB) was not downloaded: larger than the 1000 B limit]");
    // Saved in the chat's own folder of media/ (issue 29 finding 6).
    const own = conversationMediaDir(mediaDir(h.home), "telegram:42");
    expect(readdirSync(mediaDir(h.home))).toEqual(["telegram_42"]);
    const saved = readdirSync(own);
    expect(saved).toHaveLength(1);
    expect(readFileSync(join(own, saved[0]), "utf8")).toBe("local bytes");
    expect(statSync(join(own, saved[0])).mode & 0o777).toBe(0o600);
  });
});
