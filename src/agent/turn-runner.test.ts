import { describe, expect, it } from "vitest";
import { ModelError } from "../llm/model.js";
import { ModelUnavailableError } from "../llm/resilient.js";
import { FencedOutError } from "../store/cluster.js";
import { BudgetError } from "./context-budget.js";
import { ConversationMovedError } from "./lanes.js";
import { endingOf, type TurnState } from "./turn-runner.js";

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
