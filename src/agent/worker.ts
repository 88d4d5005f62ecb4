import { isOwnersChat, type MemorySharing, spaceOf } from "../access/policy.js";
import { agentOf, type InboundMessage, MAIN_AGENT } from "../bus/types.js";
import { allowListsOf } from "../config/agents.js";
import { ChatCommands } from "./commands.js";
import { Lanes } from "./lanes.js";
import { ModelWaits } from "./model-wait.js";
import { TurnOutlet } from "./turn-outlet.js";
import { TurnRunner } from "./turn-runner.js";
import type { WorkerDeps } from "./worker-deps.js";

/** Takes the bus's inbound messages: a command is answered (commands.ts), anything else waits in its conversation's
 * lane (lanes.ts) for the turn runner (turn-runner.ts), which sends through the outlet (turn-outlet.ts). */
export class AgentWorker {
  readonly lanes: Lanes;
  /** Chat commands by agent: a conversation's /model, /status and /usage are its agent's. */
  private readonly commands = new Map<string, ChatCommands>();

  constructor(private readonly deps: WorkerDeps) {
    const shutdown = new AbortController();
    const outlet = new TurnOutlet(deps);
    // Each agent's turns run with its own settings, tools, models and memory (deps.agents), chosen by the agent its
    // conversation's key names: a message can reach no other agent's.
    const runners = new Map<string, TurnRunner>();
    const run = async (msg: InboundMessage, signal: AbortSignal) => {
      const runner = runners.get(agentOf(msg.sessionKey));
      if (runner) return runner.run(msg, signal);
      // An agent taken out of the config since the message came: it waits in the inbox for its agent's return.
      deps.log.warn({ session: msg.sessionKey }, "a message for an agent that is not configured now is left waiting");
      return undefined;
    };
    this.lanes = new Lanes({ run, maxConcurrent: () => deps.config.agent.maxConcurrentTurns, log: deps.log }, shutdown);
    const agents: [string, Partial<WorkerDeps>][] = [[MAIN_AGENT, {}], ...(deps.agents ?? [])];
    for (const [agent, own] of agents) {
      const turn: WorkerDeps = { ...deps, ...own, log: (own.log ?? deps.log).child({ agent }) };
      const sharing: MemorySharing = { ...turn.config.memory, allowFrom: allowListsOf(turn.config) };
      // Facts go to the MEMORY.md of the person's space, from their direct chats only.
      const facts = (msg: InboundMessage) => !msg.isGroup && (msg.person || isOwnersChat(msg, sharing.allowFrom));
      const consolidate = (msg: InboundMessage) =>
        turn.consolidator?.afterTurn(msg.sessionKey, facts(msg) ? spaceOf(msg, turn.config.workspace) : undefined);
      const waits = new ModelWaits(turn, outlet);
      runners.set(agent, new TurnRunner(turn, outlet, waits, sharing, shutdown.signal, consolidate));
      this.commands.set(agent, new ChatCommands({ ...turn, consolidate }, this.lanes, outlet));
    }
  }

  async run(): Promise<void> {
    for await (const msg of this.deps.bus.inbound) {
      // One bad message must not end the loop that serves every chat.
      try {
        if (!this.commands.get(agentOf(msg.sessionKey))?.take(msg)) this.lanes.push(msg);
      } catch (err) {
        this.deps.log.error({ err, session: msg.sessionKey }, "could not accept a message");
      }
      // A burst: let the turn just started send its model request before the next one spends the thread on its prompt.
      if (this.deps.bus.inbound.size > 0) await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }
}
