import { describe, expect, it } from "vitest";
import { nobodyWatches, scheduledRunOffers, withheldInScheduledRun } from "./scheduled-tools.js";

describe("tools of a scheduled run", () => {
  it("by default offers everything but cron and spawn", () => {
    const offers = scheduledRunOffers(undefined);
    expect(["exec", "read_file", "web_fetch", "mcp_x_y", "cron", "spawn"].filter(offers)).toEqual([
      "exec",
      "read_file",
      "web_fetch",
      "mcp_x_y",
    ]);
  });

  it("offers only the configured tools, and never cron or spawn even when listed", () => {
    const offers = scheduledRunOffers(["read_file", "cron", "spawn"]);
    expect(["exec", "read_file", "cron", "spawn"].filter(offers)).toEqual(["read_file"]);
    expect(scheduledRunOffers([])("read_file")).toBe(false);
  });

  it("says why a tool is withheld", () => {
    expect(withheldInScheduledRun("cron")).toMatch(/may not create jobs or start helpers/);
    expect(withheldInScheduledRun("exec")).toMatch(/config cron\.tools/);
  });

  it("counts reminders, the heartbeat and a helper's relayed result as runs nobody watches, chats not", () => {
    expect(nobodyWatches({ channel: "system" })).toBe(true);
    for (const channel of ["telegram", "discord", "console", "web"] as const) {
      expect(nobodyWatches({ channel })).toBe(false);
    }
  });
});
