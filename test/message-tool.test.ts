import { execFileSync } from "node:child_process";
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { ChatRequest } from "./fakes/openai-server.js";
import { message, privateChat, startTelegramHarness, type TelegramHarness, user } from "./helpers/telegram.js";

/** The message tool end to end: the real grammy client, the fake Bot API and the fake model. */

let h: TelegramHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const ADA = user(42, "Ada");

/** The result the model got back for its call of `message`, from the request that followed it. */
function toolResult(requests: ChatRequest[], callId: string): string | undefined {
  for (const request of requests) {
    const found = request.messages.find((m) => m.role === "tool" && m.tool_call_id === callId);
    if (found) return String(found.content);
  }
  return undefined;
}

async function callMessage(harness: TelegramHarness, args: Record<string, unknown>, answer = "done"): Promise<string> {
  const id = `call_msg_${Math.random().toString(36).slice(2)}`;
  harness.model.enqueue({ toolCalls: [{ name: "message", arguments: args, id }] }, { content: answer });
  harness.telegram.pushUpdate(message(privateChat(42), ADA, { text: "go" }));
  return harness.telegram.waitFor(() => toolResult(harness.model.requests, id));
}

describe("message tool", () => {
  it("sends to the current chat and returns the platform's message id; the same answer is not sent twice", async () => {
    h = await startTelegramHarness();
    const result = await callMessage(h, { content: "Here is the summary." }, "Here is the summary.");
    const sent = await h.telegram.waitFor(() => h?.telegram.sent.find((m) => m.text === "Here is the summary."));
    expect(result).toBe(`Sent to telegram:42 (message id ${sent.messageId}).`);
    // The turn ends; its answer equals what the tool sent, so nothing more goes out.
    await h.telegram.waitFor(() => h?.model.requests.length === 2);
    h.model.enqueue({ content: "next answer" });
    h.telegram.pushUpdate(message(privateChat(42), ADA, { text: "and now?" }));
    await h.telegram.waitFor(() => h?.telegram.sent.find((m) => m.text === "next answer"));
    expect(h.telegram.sent.filter((m) => m.text === "Here is the summary.")).toHaveLength(1);
  });

  it("refuses a target that is not on message.allowedTargets, and sends nothing there", async () => {
    h = await startTelegramHarness();
    const result = await callMessage(h, { content: "psst", chat_id: "777" });
    expect(result).toMatch(/^Error: telegram:777 is not on message.allowedTargets/);
    const other = await callMessage(h, { content: "psst", channel: "discord", chat_id: "5" });
    expect(other).toMatch(/^Error: discord:5 is not on message.allowedTargets/);
    await h.telegram.waitFor(() => h?.telegram.sent.filter((m) => m.text === "done").length === 2);
    expect(h.telegram.sent.filter((m) => m.chatId !== "42")).toEqual([]);
  });

  it("writes to an allowed target and stores the message in that chat's history", async () => {
    h = await startTelegramHarness({
      adjust: (config) => {
        config.message.allowedTargets = ["telegram:777"];
      },
    });
    const result = await callMessage(h, { content: "Dinner at eight.", chat_id: "777" });
    const sent = h.telegram.sent.find((m) => m.chatId === "777");
    expect(sent?.text).toBe("Dinner at eight.");
    expect(result).toBe(`Sent to telegram:777 (message id ${sent?.messageId}).`);
    const history = await h.app.store.conversations.recent("telegram:777", 10_000);
    expect(history.map((m) => m.content)).toEqual(["[system: message tool] sent from telegram:42", "Dinner at eight."]);
  });

  it("refuses an allowed target whose channel is not running, and more than 10 files", async () => {
    h = await startTelegramHarness({
      adjust: (config) => {
        config.message.allowedTargets = ["discord:555"];
      },
    });
    expect(await callMessage(h, { content: "hi", channel: "discord", chat_id: "555" })).toBe(
      "Error: the discord channel is not running in this pincer, so nothing was sent.",
    );
    const many = Array.from({ length: 11 }, (_, i) => `f${i}.txt`);
    expect(await callMessage(h, { content: "files", media: many })).toMatch(
      /^Error: invalid arguments for message: media must NOT have more than 10 items/,
    );
  });

  it("returns the platform's refusal instead of a blind 'sent'", async () => {
    h = await startTelegramHarness();
    h.telegram.failNext("sendMessage", { status: 403, description: "Forbidden: bot was blocked by the user" });
    const result = await callMessage(h, { content: "hello?" });
    expect(result).toBe(
      "Error: Telegram refused it: Forbidden: bot was blocked by the user. Nothing was delivered to telegram:42.",
    );
  });

  it("says the message waits in the outbox when Telegram keeps failing, and delivers it when it is back", async () => {
    h = await startTelegramHarness();
    h.telegram.failNext("sendMessage", { status: 502 }, 4);
    const result = await callMessage(h, { content: "later" });
    expect(result).toMatch(/^Error: the platform did not take it yet .*stays in the outbox/);
    // The outbox sender keeps trying without a restart; the turn's own answer waits behind it.
    await h.telegram.waitFor(() => h?.telegram.sent.find((m) => m.text === "done"));
    expect(h.telegram.sent.map((m) => m.text)).toEqual(["later", "done"]);
    await h.telegram.waitFor(async () => (await h!.app.store.journal.pendingOutbound("telegram")).length === 0);
  });

  it("sends a workspace file as an attachment, and refuses paths outside, symlinks, FIFOs and oversized files", async () => {
    h = await startTelegramHarness({
      adjust: (config) => {
        config.media.maxBytes = 1000;
      },
    });
    const workspace = h.app.config.workspace;
    mkdirSync(join(workspace, "out"), { recursive: true });
    writeFileSync(join(workspace, "out", "chart.csv"), "a,b\n1,2\n");
    const result = await callMessage(h, { content: "the chart", media: ["out/chart.csv"] });
    const file = await h.telegram.waitFor(() => h?.telegram.sent.find((m) => m.file?.name === "chart.csv"));
    expect(file.method).toBe("sendDocument");
    expect(file.file?.size).toBe(8);
    expect(result).toMatch(/^Sent to telegram:42 \(message ids \d+, \d+\)\.$/);

    const secret = join(h.home, "secret.txt");
    writeFileSync(secret, "token");
    symlinkSync(secret, join(workspace, "link.txt"));
    execFileSync("mkfifo", [join(workspace, "pipe")]);
    writeFileSync(join(workspace, "big.bin"), Buffer.alloc(2000));
    expect(await callMessage(h, { content: "x", media: ["/etc/passwd"] })).toMatch(
      /^Error: .*leads outside the workspace/,
    );
    expect(await callMessage(h, { content: "x", media: ["link.txt"] })).toMatch(
      /^Error: .*(outside the workspace|pincer's own data)/,
    );
    expect(await callMessage(h, { content: "x", media: ["../pincer.db"] })).toMatch(/^Error: /);
    expect(await callMessage(h, { content: "x", media: ["pipe"] })).toMatch(/^Error: "pipe" is a named pipe \(FIFO\)/);
    expect(await callMessage(h, { content: "x", media: ["big.bin"] })).toMatch(
      /^Error: "big.bin" is 2000 bytes, more than the limit/,
    );
    expect(h.telegram.sent.filter((m) => m.text === "x" || m.file?.name === "secret.txt")).toEqual([]);
  });
});
