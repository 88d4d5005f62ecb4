import { ModelError } from "../llm/model.js";
import { ModelUnavailableError } from "../llm/resilient.js";
import { FencedOutError } from "../store/cluster.js";
import { BudgetError } from "./context-budget.js";
import { ConversationMovedError } from "./lanes.js";
import type { TurnReport } from "./turn-stats.js";

/** How a turn that threw ends, first match wins, and what it counts as in the turn's log line and metrics. */
const ENDINGS = [
  // Left pending in the inbox, the start not counted (an orderly stop is no crash): it runs again after the restart.
  { ending: "shutdown", when: (_err: unknown, turn: TurnState) => turn.shuttingDown, outcome: "stopped" },
  // Another process runs the conversation now and resumes this turn from its journal.
  { ending: "moved", when: (_err, turn) => turn.reason instanceof ConversationMovedError, outcome: "stopped" },
  // Another process answered the message meanwhile (this one was paused): nothing to add.
  { ending: "fenced", when: (err) => err instanceof FencedOutError, outcome: undefined },
  // /stop: the words so far, or "Stopped.".
  { ending: "stopped", when: (_err, turn) => turn.aborted, outcome: "stopped" },
  // Nothing happened yet (no tool ran): the message can wait for the model and run again.
  { ending: "wait", when: (err, turn) => err instanceof ModelUnavailableError && turn.mayWait, outcome: "error" },
  { ending: "model", when: (err) => err instanceof ModelError, outcome: "model_error" },
  { ending: "too-big", when: (err) => err instanceof BudgetError, outcome: "error" },
  { ending: "crash", when: () => true, outcome: "error" },
] as const satisfies ReadonlyArray<{
  ending: string;
  when: (err: unknown, turn: TurnState) => boolean;
  /** undefined: as the turn's signal says (stopped when it was aborted). */
  outcome: TurnReport["outcome"] | undefined;
}>;

export type Ending = (typeof ENDINGS)[number]["ending"];

/** What is known of a turn when it threw. */
export interface TurnState {
  shuttingDown: boolean;
  /** The turn's signal: aborted by /stop, the shutdown or a move, and why. */
  aborted: boolean;
  reason: unknown;
  /** Whether it may wait for the model (no tool ran, and waiting is on). */
  mayWait: boolean;
}

export function endingOf(err: unknown, turn: TurnState): { ending: Ending; outcome: TurnReport["outcome"] } {
  const row = ENDINGS.find((r) => r.when(err, turn))!;
  return { ending: row.ending, outcome: row.outcome ?? (turn.aborted ? "stopped" : "error") };
}
