import { describe, expect, it } from "vitest";
import { ModelError } from "../llm/model.js";
import { ModelUnavailableError } from "../llm/resilient.js";
import { FencedOutError } from "../store/cluster.js";
import { BudgetError } from "./context-budget.js";
import { ConversationMovedError } from "./lanes.js";
import { endingOf, nobodyWatches, scheduledRunOffers, type TurnState, withheldInScheduledRun } from "./turn-runner.js";

const running: TurnState = { shuttingDown: false, aborted: false, reason: undefined, mayWait: true };
const unavailable = () => new ModelUnavailableError("down", Date.now());
const fenced = () => new FencedOutError({ name: "turn:telegram:1", epoch: 2 });

describe("endingOf", () => {
  it("a shutdown wins over anything the turn threw: the message runs again after the restart", () => {
    const turn = { ...running, shuttingDown: true, aborted: true };
    expect(endingOf(new ModelError("x"), turn)).toEqual({ ending: "shutdown", outcome: "stopped" });
  });

  it("a conversation moved to another process is left to it, before /stop is considered", () => {
    const turn = { ...running, aborted: true, reason: new ConversationMovedError("moved") };
    expect(endingOf(new Error("aborted"), turn)).toEqual({ ending: "moved", outcome: "stopped" });
  });

  it("fenced out counts as the signal says", () => {
    expect(endingOf(fenced(), running)).toEqual({ ending: "fenced", outcome: "error" });
    expect(endingOf(fenced(), { ...running, aborted: true })).toEqual({
      ending: "fenced",
      outcome: "stopped",
    });
  });

  it("waits for the model only when it may; otherwise the model's failure is told", () => {
    expect(endingOf(unavailable(), running).ending).toBe("wait");
    expect(endingOf(unavailable(), { ...running, mayWait: false })).toEqual({
      ending: "model",
      outcome: "model_error",
    });
    expect(endingOf(unavailable(), { ...running, aborted: true }).ending).toBe("stopped");
  });

  it("a prompt too big and anything else", () => {
    expect(endingOf(new BudgetError("too big", 10, 5), running)).toEqual({ ending: "too-big", outcome: "error" });
    expect(endingOf(new TypeError("bug"), running)).toEqual({ ending: "crash", outcome: "error" });
  });
});

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
