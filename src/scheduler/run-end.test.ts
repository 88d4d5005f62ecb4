import { expect, it } from "vitest";
import type { OutboundMessage } from "../bus/types.js";
import type { StoredMessage } from "../store/store.js";
import { runEnd } from "./run-end.js";

const to = { channel: "telegram", chatId: "42" } as const;
const user: StoredMessage = { role: "user", content: "due" };
const called = (name: string, args: object | string): StoredMessage => ({
  role: "assistant",
  content: null,
  toolCalls: [{ id: "c", name, arguments: typeof args === "string" ? args : JSON.stringify(args) }],
});

it("tells how a run ended from what its turn stored and sent", () => {
  const reply: OutboundMessage = { ...to, kind: "reply", text: "Stretch!" };
  expect(runEnd([user, called("list_dir", {}), { role: "assistant", content: "Stretch!" }], reply, 5)).toEqual({
    outcome: "ok",
    toolCalls: 1,
    delivered: "Stretch!",
    at: 5,
  });
  const failed: OutboundMessage = { ...to, kind: "notice", text: "Sorry, the model failed.", failed: true };
  expect(runEnd([user], failed, 5)).toMatchObject({ outcome: "failed", reason: "Sorry, the model failed." });
  expect(runEnd([user], { ...to, kind: "notice", text: "Stopped." }, 5)).toMatchObject({
    outcome: "stopped",
    reason: "Stopped.",
  });
  // Sent with the message tool (the reply then stays unsent), or nothing at all.
  expect(runEnd([user, called("message", { content: "Stretch now" })], undefined, 5)).toMatchObject({
    outcome: "ok",
    delivered: "Stretch now",
  });
  expect(runEnd([user, called("message", "not json")], undefined, 5)).toMatchObject({
    outcome: "ok",
    reason: "the model had nothing to send",
  });
  expect(runEnd([], undefined, 5)).toMatchObject({ outcome: "skipped" });
});
