import { describe, expect, it } from "vitest";
import { groupDecision } from "./gating.js";

const base = {
  isGroup: true,
  chatId: "-100",
  mentionsBot: false,
  repliesToBot: false,
  isCommand: false,
  allowedGroups: [],
};

describe("groupDecision", () => {
  it("always answers private chats", () => {
    expect(groupDecision({ ...base, isGroup: false, allowedGroups: ["-5"] })).toEqual({ answer: true });
  });

  it("answers in a group only when addressed", () => {
    expect(groupDecision(base)).toEqual({ answer: false, reason: "not addressed to the bot" });
    expect(groupDecision({ ...base, mentionsBot: true })).toEqual({ answer: true });
    expect(groupDecision({ ...base, repliesToBot: true })).toEqual({ answer: true });
    expect(groupDecision({ ...base, isCommand: true })).toEqual({ answer: true });
  });

  it("stays out of groups missing from a non-empty allowedGroups list", () => {
    expect(groupDecision({ ...base, mentionsBot: true, allowedGroups: ["-200"] })).toEqual({
      answer: false,
      reason: "group not in telegram.allowedGroups",
    });
    expect(groupDecision({ ...base, mentionsBot: true, allowedGroups: ["-200", "-100"] })).toEqual({ answer: true });
  });
});
