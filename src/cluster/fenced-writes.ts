import type { InboundMessage } from "../bus/types.js";
import { type Fence, FencedOutError } from "../store/cluster.js";
import type { FencedTurnWrites, Store } from "../store/store.js";
import { turnLeaseName } from "./turn-dispatcher.js";

/** The writes a turn makes, as the worker gets them. */
type TurnWrites = Pick<Store, "journal" | "steps" | "turns">;

/** Clustered mode's turn writes, each made under the turn lease and refused (FencedOutError, nothing written) once this
 * process no longer holds it, also a write already on its way when the process was paused. */
export function fenceTurnWrites(
  writes: TurnWrites,
  fenceOf: (sessionKey: string) => Fence | undefined,
  fenced: (fence: Fence) => FencedTurnWrites,
): TurnWrites {
  // The fence each running turn began under, by message: a process paused past its lease that took the conversation
  // again since holds a newer fence, which its late turn must not write under.
  const began = new Map<string, Fence>();
  const under = (msg: InboundMessage, beginning = false) => {
    const fence = beginning ? fenceOf(msg.sessionKey) : (began.get(msg.id) ?? fenceOf(msg.sessionKey));
    if (!fence) throw new FencedOutError({ name: turnLeaseName(msg.sessionKey), epoch: 0 });
    if (beginning) began.set(msg.id, fence);
    return fenced(fence);
  };
  // The journal as it is (the bus and the worker use the rest of it), with only the turn's write fenced.
  const journal: Store["journal"] = Object.create(writes.journal);
  journal.recordTurnStart = async (msg) => under(msg, true).recordTurnStart(msg);
  return {
    journal,
    steps: {
      assistant: async (msg, message) => under(msg).steps.assistant(msg, message),
      started: async (msg, callId) => under(msg).steps.started(msg, callId),
      result: async (msg, callId, content) => under(msg).steps.result(msg, callId, content),
      load: (msg) => writes.steps.load(msg),
    },
    turns: {
      finishTurn: async (msg, messages, out) =>
        under(msg)
          .turns.finishTurn(msg, messages, out)
          .finally(() => began.delete(msg.id)),
      // The messages set aside are all of one conversation, the one the notice goes to.
      setAside: async (messages, out, archive) =>
        messages[0]
          ? under(messages[0])
              .turns.setAside(messages, out, archive)
              .finally(() => {
                for (const msg of messages) began.delete(msg.id);
              })
          : writes.turns.setAside(messages, out, archive),
    },
  };
}
