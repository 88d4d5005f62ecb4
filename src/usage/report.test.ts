import { describe, expect, it } from "vitest";
import type { UsageGroup } from "../store/store.js";
import { foldGroups, reportText } from "./report.js";

const group = (extra: Partial<UsageGroup>): UsageGroup => ({
  kind: "conversation",
  model: "small",
  here: true,
  today: true,
  calls: 1,
  promptTokens: 1000,
  completionTokens: 200,
  cachedTokens: 0,
  cost: 0.5,
  unpriced: 0,
  estimated: 0,
  ...extra,
});

describe("the /usage text", () => {
  it("shows today and this month, this chat and all, split by kind and model; unknown costs said so", () => {
    const report = foldGroups(
      [
        group({}),
        group({ kind: "reminder", model: "big", promptTokens: 3000, cost: 0, unpriced: 1, estimated: 1 }),
        group({ here: false, calls: 2, cost: 1 }),
        group({ today: false, kind: "heartbeat", promptTokens: 10_000, completionTokens: 0, cost: 2 }),
      ],
      { timezone: "Europe/Berlin", day: "2026-12-01", month: "2026-12", sessionKey: "telegram:1" },
    );
    expect(reportText(report)).toBe(
      [
        "Model usage (Europe/Berlin; costs in the price table's currency):",
        "Today (2026-12-01), this chat: 4,400 tokens (1 of 2 calls estimated), 0.5000 + unknown (1 call without a price)",
        "  reminder 3,200, conversation 1,200 · big 3,200, small 1,200",
        "Today, all chats: 5,600 tokens (1 of 4 calls estimated), 1.50 + unknown (1 call without a price)",
        "  reminder 3,200, conversation 2,400 · big 3,200, small 2,400",
        "This month (2026-12), this chat: 14,400 tokens (1 of 3 calls estimated), 2.50 + unknown (1 call without a price)",
        "  heartbeat 10,000, reminder 3,200, conversation 1,200 · small 11,200, big 3,200",
        "This month, all chats: 15,600 tokens (1 of 5 calls estimated), 3.50 + unknown (1 call without a price)",
        "  heartbeat 10,000, reminder 3,200, conversation 2,400 · small 12,400, big 3,200",
      ].join("\n"),
    );
  });

  it("says nothing was used, and a cost is unknown when no call had a price", () => {
    const report = foldGroups([group({ here: false, cost: 0, unpriced: 1 })], {
      timezone: "UTC",
      day: "2026-12-01",
      month: "2026-12",
      sessionKey: "telegram:1",
    });
    const text = reportText(report);
    expect(text).toContain("Today (2026-12-01), this chat: nothing\n");
    expect(text).toContain("Today, all chats: 1,200 tokens, cost unknown\n");
  });
});
