import { isOwnersChat, type MemorySharing } from "../access/policy.js";
import type { InboundMessage } from "../bus/types.js";
import { allowListsOf } from "../config/agents.js";
import { ChatCommands } from "./commands.js";
import { Lanes } from "./lanes.js";
import { ModelWaits } from "./model-wait.js";
import { TurnOutlet } from "./turn-outlet.js";
import { TurnRunner } from "./turn-runner.js";
import type { WorkerDeps } from "./worker-deps.js";

/**
 * Takes the bus's inbound messages: a chat command is answered (commands.ts), anything else waits in its
 * conversation's lane (lanes.ts) for the turn runner (turn-runner.ts), which sends everything through the outlet
 * (turn-outlet.ts). Per conversation in order, across them in parallel up to `maxConcurrentTurns`; none is dropped.
 */
export class AgentWorker {
  private readonly lanes: Lanes;
  private readonly commands: ChatCommands;

  constructor(private readonly deps: WorkerDeps) {
    /** Who shares the owner's MEMORY.md: the allowlists (each bot's) and config memory.shareWith*. */
    const sharing: MemorySharing = { ...deps.config.memory, allowFrom: allowListsOf(deps.config) };
    const consolidate = (msg: InboundMessage) =>
      deps.consolidator?.afterTurn(msg.sessionKey, isOwnersChat(msg, sharing.allowFrom));
    const shutdown = new AbortController();
    const outlet = new TurnOutlet(deps);
    const runner = new TurnRunner(deps, outlet, new ModelWaits(deps, outlet), sharing, shutdown.signal, consolidate);
    const maxConcurrent = () => deps.config.agent.maxConcurrentTurns;
    this.lanes = new Lanes({ run: (msg, signal) => runner.run(msg, signal), maxConcurrent, log: deps.log }, shutdown);
    this.commands = new ChatCommands({ ...deps, consolidate }, this.lanes, outlet);
  }

  async run(): Promise<void> {
    for await (const msg of this.deps.bus.inbound) {
      // One bad message must not end the loop that serves every chat.
      try {
        if (!this.commands.take(msg)) this.lanes.push(msg);
      } catch (err) {
        this.deps.log.error({ err, session: msg.sessionKey }, "could not accept a message");
      }
      // A burst: let the turn just started send its model request before the next one spends the thread on its prompt.
      if (this.deps.bus.inbound.size > 0) await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }

  /** Cancels running turns (their messages stay pending in the inbox and run after a restart). */
  stop(): Promise<void> {
    return this.lanes.stop();
  }

  /** Clustered, the turn lease went elsewhere: abort the turn unwritten, drop the queue (it stays in the shared inbox). */
  drop(sessionKey: string): void {
    this.lanes.drop(sessionKey);
  }

  /** Turns running now, and messages waiting behind them. */
  get load(): { running: number; queued: number } {
    return this.lanes.load;
  }

  get runningSessions(): string[] {
    return this.lanes.runningSessions;
  }
}
