import { randomBytes } from "node:crypto";
import { EventEmitter, once } from "node:events";
import type { Logger } from "pino";
import { roleSettings } from "../access/roles.js";
import { StopRequested } from "../bus/commands.js";
import type { Switchboard } from "../bus/switchboard.js";
import {
  agentChatKey,
  agentOf,
  type ButtonTap,
  MAIN_AGENT,
  type OutboundMessage,
  parseSessionKey,
  personOf,
  replyTarget,
  routeOf,
} from "../bus/types.js";
import { allowListsOf } from "../config/agents.js";
import type { Config } from "../config/config.js";
import type { ToolCall } from "../llm/reply.js";
import { parseJson } from "../llm/text-tool-calls.js";
import type { Approval, Store } from "../store/store.js";
import { compilePatterns } from "../tools/exec/guard.js";
import type { ToolContext } from "../tools/tool.js";
import { obeyedFilesChangedSince } from "./obeyed-files.js";
import {
  type ApprovalPolicy,
  approvalButtons,
  askedCall,
  type Choice,
  fenced,
  MAX_SUMMARY_CHARS,
  mayDecide,
  parseTapData,
} from "./policy.js";

export interface ApprovalDeps {
  store: Store["approvals"];
  bus: Pick<Switchboard, "outboundRecorded">;
  policy: ApprovalPolicy;
  timeoutSeconds: number;
  /** Each agent's own (its `approvals` and `exec.allowPatterns`) by name; an agent not named asks as `policy` says. */
  agents?: Record<string, Pick<ApprovalDeps, "policy" | "timeoutSeconds">>;
  /** Config `roles` (each role's `approvals`) and `people`; the allowlists name the owner who decides for the rest. */
  roles?: Pick<Config, "roles" | "people" | "telegramAllowFrom" | "discordAllowFrom" | "accounts">;
  log: Logger;
  now?: () => Date;
}

/** How often a waiting call reads its approval again: the deciding tap may land in another process. */
const POLL_MS = 1000;

/** The approvals each agent's config `approvals` asks for; undefined when none asks for any (nothing changes). */
export function createApprovals(
  config: Config,
  deps: { store: Store; bus: Switchboard; log: Logger; now?: () => Date },
): Approvals | undefined {
  const agents = Object.fromEntries(
    Object.entries(config.agents).map(([name, own]) => {
      const { approvals, exec } = { ...config, ...own };
      const allowPatterns = compilePatterns(exec.allowPatterns, "exec.allowPatterns", name);
      return [name, { policy: { ...approvals, allowPatterns }, timeoutSeconds: approvals.timeoutSeconds }];
    }),
  );
  const asks = ({ exec, tools }: Partial<ApprovalPolicy>) => (exec ?? "off") !== "off" || (tools?.length ?? 0) > 0;
  const byRole = Object.values(config.roles).some((role) => role.approvals && asks(role.approvals));
  if (!byRole && !Object.values(agents).some(({ policy }) => asks(policy))) return undefined;
  return new Approvals({
    ...deps,
    ...agents[MAIN_AGENT],
    agents,
    roles: config,
    store: deps.store.approvals,
    log: deps.log.child({ part: "approvals" }),
  });
}

export const DENIED = "Error: denied by the user.";
const EXPIRED = "This approval has expired.";

/** Asks a person before a call the policy names: posts the prompt with its buttons to the run's conversation, waits
 * for the decision (woken here, or polling the store for another process's) until the deadline, takes it once. */
export class Approvals {
  /** Emits an approval's id when it is settled here: its waiting call wakes at once. */
  private readonly decisions = new EventEmitter().setMaxListeners(0);

  constructor(private readonly deps: ApprovalDeps) {}

  /** For a conversation's turns, which resume after a restart, and for helpers, which do not. */
  readonly forTurns = (call: ToolCall, ctx: ToolContext) => this.check(call, ctx, true);
  readonly forHelpers = (call: ToolCall, ctx: ToolContext) => this.check(call, ctx, false);

  /** Undefined when the call may run, else its result instead (`Error: …`); throws the signal's reason when aborted.
   * `resumable`: the run resumes after a restart (a conversation's turn), so a shutdown leaves its approval waiting. */
  async check(call: ToolCall, ctx: ToolContext, resumable: boolean): Promise<string | undefined> {
    const { store } = this.deps;
    const { policy: agentPolicy, timeoutSeconds } = this.rules(ctx.sessionKey);
    // The role of the person the run is for may ask for more, or less (`roles.NAME.approvals` over `approvals`).
    const { person } = ctx.inbound;
    const policy = {
      ...agentPolicy,
      ...(person && this.deps.roles && roleSettings(this.deps.roles, person.role).approvals),
    };
    const args = parseArgs(call.arguments);
    // Arguments the tool cannot take are the registry's to refuse: nothing of them would run.
    const asked = args && askedCall(call.name, args, policy);
    if (!args || !asked) return undefined;
    const target = replyTarget(ctx.inbound);
    const agent = agentOf(ctx.sessionKey);
    // Anyone but an owner has their calls decided by the owner: asked in the owner's direct chat on the bot they wrote
    // to (on Telegram its id is the owner's), else on the control page alone. "Always allow" is then for their chat.
    const forOther = person !== undefined && person.role !== "owner";
    const ownerId = forOther && target.channel === "telegram" ? this.ownerOn(routeOf(target)) : undefined;
    const askIn = ownerId ? { ...target, chatId: ownerId, threadId: undefined } : target;
    if (forOther) asked.remember = `${agentChatKey(agent, target)} ${asked.remember}`;
    // The agent's own chat on its own bot: another agent's "Always allow" there is not this one's.
    const sessionKey = agentChatKey(agent, askIn);
    const allowedAt = await store.allowedAt(sessionKey, asked.remember);
    // "Always allow" is for the command's text: it holds while the files the command obeys are as they were then.
    const changed =
      allowedAt !== undefined && call.name === "exec"
        ? await obeyedFilesChangedSince(ctx.workspace, stringArg(args.working_dir), String(args.command), allowedAt)
        : [];
    if (allowedAt !== undefined && changed.length === 0) return undefined;
    if (asked.summary.length > MAX_SUMMARY_CHARS) {
      return `Error: this call is too long to show for approval (${asked.summary.length} characters, at most ${MAX_SUMMARY_CHARS}); do it in smaller steps.`;
    }
    const turnKey = `${ctx.sessionKey}|${ctx.inbound.id}`;
    // Click fatigue: the same question is not put to the user twice in one turn.
    if (await store.deniedInTurn(turnKey, asked.summary))
      return `${DENIED} They said no to this already; do not ask again.`;
    const decider = forOther ? ownerId : personOf(ctx.inbound);
    const now = this.now();
    const id = randomBytes(9).toString("base64url");
    const { approval, created } = await store.request(
      {
        id,
        sessionKey,
        turnKey,
        toolCallId: call.id,
        tool: call.name,
        ...asked,
        decider: decider && `${target.channel}:${decider}`,
        createdAt: now,
        expiresAt: now + timeoutSeconds * 1000,
      },
      {
        ...askIn,
        kind: "reply",
        text: promptText(call.name, asked.summary, timeoutSeconds, decider && (ownerId ? person?.id : ""), changed),
        buttons: approvalButtons(id),
      },
    );
    if (created) this.deps.bus.outboundRecorded(routeOf(target));
    if (created && ownerId) {
      const text = `**Waiting for the owner** to allow this:\n${fenced(asked.summary)}`;
      await ctx.bus.publishOutbound({ ...target, kind: "notice", text });
    }
    // A resumed turn's call is the one asked about, unchanged, or it does not run.
    if (approval.summary !== asked.summary) return "Error: this call differs from the one the user was asked about.";
    const settled = await this.wait(approval, ctx.signal, resumable);
    if (settled.state === "allowed") return undefined;
    if (settled.state === "denied") return DENIED;
    return `Error: nobody answered the approval request within ${timeoutSeconds} s, so it did not run.`;
  }

  /** The router's handler of `a:` taps on a prompt's buttons: only the person the run speaks for, in the chat asked. */
  readonly tap = async (tap: ButtonTap) => {
    const parsed = parseTapData(tap.data);
    const approval = parsed && (await this.deps.store.get(parsed.id));
    if (!parsed || !approval) return { text: EXPIRED };
    const here = {
      sessionKey: agentChatKey(agentOf(approval.sessionKey), tap),
      decider: `${tap.channel}:${tap.senderId}`,
    };
    if (!mayDecide(approval, here)) return { text: "This is not yours to decide." };
    return { text: (await this.decide(approval.id, parsed.choice, tap.senderName)).text };
  };

  /** Decides (the control page calls it directly): whether this decision was taken, and what the decider is told. */
  async decide(id: string, choice: Choice, by: string): Promise<{ taken: boolean; text: string }> {
    const { store } = this.deps;
    const now = this.now();
    const decided = await store.decide(id, choice, by, now, (a) => this.edit(a, decidedText(a)));
    if (decided) {
      this.settled(decided);
      return { taken: true, text: { deny: "Denied.", always: "Always allowed here.", once: "Allowed once." }[choice] };
    }
    const current = await store.get(id);
    if (current?.state === "pending" && now >= current.expiresAt) await this.expire(current, now);
    const settled = current?.state === "allowed" || current?.state === "denied";
    return { taken: false, text: settled ? `Already ${current.state}.` : EXPIRED };
  }

  private async wait(approval: Approval, signal: AbortSignal, resumable: boolean): Promise<Approval> {
    let current = approval;
    try {
      while (current.state === "pending") {
        const left = current.expiresAt - this.now();
        if (left <= 0) return (await this.expire(current, this.now())) ?? current;
        await this.sleep(current.id, signal, Math.min(left, POLL_MS));
        current = (await this.deps.store.get(current.id)) ?? current;
      }
      return current;
    } catch (err) {
      // Stopped, or a helper's end: nobody waits for a decision any more. A shutdown keeps it for the resumed turn.
      if (signal.aborted && (!resumable || signal.reason instanceof StopRequested)) {
        await this.expire(current, this.now(), "the request ended before anyone answered").catch((e: unknown) =>
          this.deps.log.warn({ err: e }, "could not close an approval"),
        );
      }
      throw err;
    }
  }

  private async sleep(id: string, signal: AbortSignal, ms: number): Promise<void> {
    // A timer of our own, not AbortSignal.timeout's unref'd one: `pincer agent -m` must not exit while it waits.
    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort(), ms);
    try {
      await once(this.decisions, id, { signal: AbortSignal.any([signal, timeout.signal]) });
    } catch (err) {
      if (signal.aborted) throw signal.reason;
      if (!timeout.signal.aborted) throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  private async expire(approval: Approval, now: number, why?: string): Promise<Approval | undefined> {
    const reason = why ?? `nobody answered within ${this.rules(approval.sessionKey).timeoutSeconds} s`;
    const expired = await this.deps.store.expire(approval.id, now, (a) =>
      this.edit(a, `⌛ Not run: ${reason}.\n${fenced(a.summary)}`),
    );
    if (expired) this.settled(expired);
    return expired ?? (await this.deps.store.get(approval.id));
  }

  /** The first owner a bot's allowlist names (`*` names nobody). */
  private ownerOn(route: string): string | undefined {
    return this.deps.roles && allowListsOf(this.deps.roles)[route]?.find((id) => id !== "*");
  }

  private rules(sessionKey: string): Pick<ApprovalDeps, "policy" | "timeoutSeconds"> {
    return this.deps.agents?.[agentOf(sessionKey)] ?? this.deps;
  }

  private now(): number {
    return (this.deps.now?.() ?? new Date()).getTime();
  }

  private settled(approval: Approval): void {
    this.decisions.emit(approval.id);
    const target = parseSessionKey(approval.sessionKey);
    if (target) this.deps.bus.outboundRecorded(routeOf(target));
  }

  private edit(approval: Approval, text: string): OutboundMessage | undefined {
    const target = parseSessionKey(approval.sessionKey);
    if (!target || approval.promptOutboxId === undefined) return undefined;
    return { ...target, kind: "reply", text, editOf: { outboxId: approval.promptOutboxId }, buttons: [] };
  }
}

function parseArgs(raw: string): Record<string, unknown> | undefined {
  const args = parseJson(raw || "{}");
  return args && typeof args === "object" && !Array.isArray(args) ? (args as Record<string, unknown>) : undefined;
}

/** `decider`: undefined, the control page decides; "", who started it; a person's id, the owner for them. */
function promptText(tool: string, summary: string, seconds: number, decider: string | undefined, changed: string[]) {
  const what = `${tool === "exec" ? "run this command" : `use the tool ${tool}`}${decider ? ` for ${decider}` : ""}`;
  const who =
    decider === undefined
      ? "The owner decides on the control page"
      : decider
        ? "You decide as the owner"
        : "Only the person who started this can decide";
  const again =
    changed.length === 0
      ? ""
      : `Asked again: you always allowed it, but files it obeys changed since: ${changed.slice(0, 5).join(", ")}${changed.length > 5 ? ` and ${changed.length - 5} more` : ""}.\n`;
  return `**Approval needed:** pincer wants to ${what}:\n${fenced(summary)}\n${again}${who}; ${seconds} s to answer.`;
}

const stringArg = (value: unknown) => (typeof value === "string" ? value : undefined);

function decidedText(a: Approval): string {
  const how = { deny: "🚫 Denied", always: "✅ Always allowed here", once: "✅ Allowed once" }[a.choice ?? "once"];
  return `${how} by ${a.decidedBy}:\n${fenced(a.summary)}`;
}
