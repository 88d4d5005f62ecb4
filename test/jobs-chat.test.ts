import { afterEach, describe, expect, it } from "vitest";
import type { FakeReply } from "./fakes/openai-server.js";
import type { SentMessage } from "./fakes/telegram-server.js";
import {
  groupChat,
  message,
  privateChat,
  startTelegramHarness,
  type TelegramHarness,
  user,
} from "./helpers/telegram.js";
import { until } from "./helpers/until.js";

/** `/jobs` on Telegram (real grammy, the fake Bot API): a person's jobs with buttons only they (or pincer's owner) can use. */
const SCHEDULER_PREFIX = "[system: scheduler]";
const ADA = user(42, "Ada");
const BOB = user(43, "Bob"); // let in by pairing: may talk, is not pincer's owner
const EVE = user(99, "Eve"); // a stranger
const GROUP = groupChat(-100);

function model(request: { messages: Array<{ role: string; content?: unknown }> }): FakeReply {
  const last = request.messages.at(-1);
  const text = typeof last?.content === "string" ? last.content : "";
  if (last?.role === "tool") return { content: `Set: ${text.split("\n")[0]}` };
  if (text.startsWith(SCHEDULER_PREFIX)) {
    return { content: `REMINDER: ${/What the user asked for when they set it up: (.*)/.exec(text)?.[1]}` };
  }
  return {
    toolCalls: [{ name: "cron", arguments: { action: "add", message: "water the plants", every_seconds: 3600 } }],
  };
}

let tg: TelegramHarness | undefined;
afterEach(async () => {
  await tg?.close();
  tg = undefined;
});

describe("/jobs in a chat", () => {
  it("lists a person's jobs with buttons; Pause, Resume, Run now and Delete (asked twice) work for the owner alone", async () => {
    const h = await startTelegramHarness();
    tg = h;
    h.model.respond(model);
    const bob = await h.app.store.pairing.request("telegram", "43", "Bob");
    await h.app.store.pairing.approve("telegram", bob.code);
    h.telegram.pushUpdate(message(privateChat(42), ADA, { text: "remind me every hour to water the plants" }));
    await h.telegram.waitFor(() => h.telegram.sent.find((m) => m.text.startsWith("Set:")));
    const [job] = await h.app.store.jobs.listAll();

    // Bob has no jobs of his own.
    h.telegram.pushUpdate(message(privateChat(43), BOB, { text: "/jobs" }));
    await h.telegram.waitFor(() =>
      h.telegram.sent.find((m) => m.chatId === "43" && m.text.includes("no scheduled jobs")),
    );

    // Ada asks in a group the others are in too.
    h.telegram.pushUpdate(message(GROUP, ADA, { text: "/jobs" }));
    const listed = await h.telegram.waitFor(() =>
      h.telegram.sent.find((m) => m.chatId === "-100" && m.text.startsWith("water the plants")),
    );
    await h.telegram.waitFor(() =>
      h.telegram.sent.find((m) => m.chatId === "-100" && m.text.startsWith("Your jobs: 1")),
    );
    expect(labels(listed)).toEqual(["Run now", "Pause", "Delete"]);
    expect(listed.text).toContain(`job ${job.id}: every 1 h`);

    // A stranger's tap and another person's are refused; the job is untouched.
    for (const who of [EVE, BOB]) {
      const answer = await tap(h, listed, "Pause", who);
      expect(answer).toBe("Only the job's owner (or pincer's owner) can do that.");
    }
    expect((await h.app.store.jobs.get(job.id))?.pausedAt).toBeUndefined();

    // Ada pauses it: the message shows Resume instead.
    expect(await tap(h, listed, "Pause", ADA)).toContain("Paused job");
    expect((await h.app.store.jobs.get(job.id))?.pausedReason).toBe("user");
    await until(() => labels(listed).includes("Resume"), "the message edited to offer Resume");

    // Run now delivers it once, to the chat the job was made in, though it is paused.
    expect(await tap(h, listed, "Run now", ADA)).toContain("runs now");
    const delivered = await h.telegram.waitFor(() =>
      h.telegram.sent.find((m) => m.text === "REMINDER: water the plants"),
    );
    expect(delivered.chatId).toBe("42");
    expect(await tap(h, listed, "Run now", EVE)).toBe("Only the job's owner (or pincer's owner) can do that.");

    expect(await tap(h, listed, "Resume", ADA)).toContain("Resumed job");
    expect((await h.app.store.jobs.get(job.id))?.pausedAt).toBeUndefined();
    await until(() => labels(listed).includes("Pause"), "the message edited to offer Pause");

    // Delete asks once more; Cancel keeps it; Delete twice removes it.
    expect(await tap(h, listed, "Delete", ADA)).toBe("Tap Delete once more to delete it.");
    await until(() => labels(listed).join() === "Delete,Cancel", "the question");
    expect(await tap(h, listed, "Delete", BOB)).toBe("Only the job's owner (or pincer's owner) can do that.");
    expect(await tap(h, listed, "Cancel", ADA)).toBe("Kept.");
    await until(() => labels(listed).includes("Run now"), "the job shown again");
    await tap(h, listed, "Delete", ADA);
    await until(() => labels(listed).join() === "Delete,Cancel", "the question again");
    expect(await tap(h, listed, "Delete", ADA)).toContain("Deleted job");
    expect(await h.app.store.jobs.get(job.id)).toBeUndefined();
    expect(h.telegram.sent.filter((m) => m.text === "REMINDER: water the plants")).toHaveLength(1);
  }, 60_000);
});

function labels(message: SentMessage): string[] {
  return (message.keyboard ?? []).flat().map((b) => b.text);
}

/** Taps `label` under `message` as `who`; resolves with what the tapper alone was told. */
async function tap(h: TelegramHarness, message: SentMessage, label: string, who: typeof ADA): Promise<string> {
  const id = h.telegram.tap(message, label, who);
  const answer = await h.telegram.waitFor(() => h.telegram.answers.get(id));
  return answer.text ?? "";
}
