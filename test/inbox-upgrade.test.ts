/**
 * A home written by an older pincer: inbox rows whose facts are strings in `meta` (a quote, a heartbeat's target and
 * silent answer, a reminder's owner). The app started on it runs them as the messages they were.
 */
import { afterEach, expect, it } from "vitest";
import type { App } from "../src/app.js";
import { recordingChannel, sqliteOf, tempHome, testApp } from "./helpers/app.js";
import { fakeModelForFile } from "./helpers/model.js";
import { until } from "./helpers/until.js";

const fake = fakeModelForFile();
let app: App | undefined;
afterEach(async () => {
  await app?.stop();
  app = undefined;
});

const base = { senderName: "user", media: [], isGroup: false, mentionsBot: true };
const oldRows = [
  {
    ...base,
    id: "q1",
    channel: "console",
    chatId: "a",
    senderId: "user",
    text: "what about that?",
    receivedAt: 1,
    sessionKey: "console:a",
    meta: { quotedText: "the blue one", quotedFrom: "pincer", quotedTrust: "bot" },
  },
  ...[2, 3].map((n) => ({
    ...base,
    id: `heartbeat:${n}`,
    channel: "system",
    chatId: "heartbeat",
    senderId: "heartbeat",
    senderName: "heartbeat",
    text: `Heartbeat ${n}`,
    receivedAt: n,
    sessionKey: "system:heartbeat",
    meta: { kind: "heartbeat", deliverTo: "console:hb", silentReply: "HEARTBEAT_OK" },
  })),
  {
    ...base,
    id: "cron:j1:4",
    channel: "system",
    chatId: "r",
    senderId: "cron",
    senderName: "scheduler",
    text: "Scheduled reminder is due now.",
    receivedAt: 4,
    sessionKey: "console:r",
    meta: { kind: "cron", jobId: "j1", runId: "cron:j1:4", scheduledAt: "4", reminder: "stretch", userId: "user" },
  },
];

it("runs the pending messages an older pincer stored with their facts in meta", async () => {
  const home = tempHome("pincer-upgrade-");
  const before = await testApp(fake.url, home);
  const insert = sqliteOf(before).prepare(
    "INSERT INTO inbox (id, session_key, payload, received_at) VALUES (?, ?, ?, ?)",
  );
  for (const row of oldRows) {
    insert.run(`${row.channel}:${row.chatId}:${row.id}`, row.sessionKey, JSON.stringify(row), row.receivedAt);
  }
  await before.stop();

  const lastUser = (r: (typeof fake.requests)[number]) =>
    String(r.messages.filter((m) => m.role === "user").at(-1)?.content);
  fake.respond((request) => {
    const text = lastUser(request);
    if (text.includes("Heartbeat 2")) return { content: "HEARTBEAT_OK" };
    if (text.includes("Heartbeat 3")) return { content: "The disk is full." };
    return { content: text.includes("Scheduled") ? "Time to stretch." : "The blue one is cheaper." };
  });
  app = await testApp(fake.url, home);
  const channel = recordingChannel(app);
  await app.start([channel]);
  await until(async () => (await app?.store.journal.pendingInbound())?.length === 0, "the old rows to be answered");

  expect(lastUser(fake.requests.find((r) => lastUser(r).includes("what about that?"))!)).toContain(
    '[replying to your own earlier message: "the blue one"]',
  );
  const reminder = fake.requests.find((r) => lastUser(r).includes("Scheduled"))!;
  // Still a scheduled run: it may not schedule jobs or start helpers.
  expect(reminder.tools?.map((t) => t.function.name)).not.toContain("cron");
  expect(channel.sent.map(({ chatId, text, replyToId }) => ({ chatId, text, replyToId }))).toEqual(
    expect.arrayContaining([
      { chatId: "a", text: "The blue one is cheaper.", replyToId: "q1" },
      { chatId: "hb", text: "The disk is full.", replyToId: undefined },
      { chatId: "r", text: "Time to stretch.", replyToId: undefined },
    ]),
  );
  // The heartbeat's "nothing to tell" is still silent.
  expect(channel.sent).toHaveLength(3);
});
