import { describe, expect, it } from "vitest";
import { groupRefusal } from "./normalize.js";

const base = {
  isGroup: true,
  chatId: "-100",
  mentionsBot: false,
  repliesToBot: false,
  isCommand: false,
  allowedGroups: [],
};

describe("groupRefusal", () => {
  it("always answers private chats", () => {
    expect(groupRefusal({ ...base, isGroup: false, allowedGroups: ["-5"] })).toBeUndefined();
  });

  it("answers in a group only when addressed", () => {
    expect(groupRefusal(base)).toBe("not addressed to the bot");
    expect(groupRefusal({ ...base, mentionsBot: true })).toBeUndefined();
    expect(groupRefusal({ ...base, repliesToBot: true })).toBeUndefined();
    expect(groupRefusal({ ...base, isCommand: true })).toBeUndefined();
  });

  it("stays out of groups missing from a non-empty allowedGroups list", () => {
    expect(groupRefusal({ ...base, mentionsBot: true, allowedGroups: ["-200"] })).toBe(
      "group not in telegram.allowedGroups",
    );
    expect(groupRefusal({ ...base, mentionsBot: true, allowedGroups: ["-200", "-100"] })).toBeUndefined();
  });
});
