import type { Logger } from "pino";
import type { Switchboard } from "../bus/switchboard.js";
import { agentChatKey, agentSessionKey, type InboundMessage, parseSessionKey } from "../bus/types.js";
import { agentAccount } from "../config/agents.js";
import type { Config } from "../config/config.js";
import { readTextBeneath } from "../tools/files/safe-io.js";

/** What the model answers when a heartbeat finds nothing worth telling; such a reply is not sent. */
export const HEARTBEAT_OK = "HEARTBEAT_OK";

/** The dedicated conversation heartbeat turns run in (their history stays out of every chat). */
export const HEARTBEAT_SESSION = "system:heartbeat";

/** The standing tasks in HEARTBEAT.md: every list item neither ticked off (`- [x]`) nor empty. Headings, prose and HTML
 * comments are not tasks, so the template (prose only) is idle. */
export function activeTasks(markdown: string): string[] {
  return markdown
    .replace(/<!--[\s\S]*?-->/g, "")
    .split("\n")
    .flatMap((line) => {
      const item = /^\s*(?:[-*+]|\d+[.)])\s+(.*)$/.exec(line);
      const box = item && /^\[([ xX])\]\s*(.*)$/.exec(item[1]);
      const text = item && box?.[1].toLowerCase() !== "x" ? (box ? box[2] : item[1]).trim() : "";
      return text ? [text] : [];
    });
}

/** The inbound system message of one heartbeat; its answer goes to `target` unless it is HEARTBEAT_OK. */
function heartbeatMessage(tasks: string[], target: string, now: number, sessionKey: string): InboundMessage {
  const text = [
    "Heartbeat: a periodic check of the standing tasks in HEARTBEAT.md:",
    ...tasks.map((t) => `- ${t}`),
    "",
    "Check them now with your tools. If there is something the user should hear about, write it as",
    `your reply: it is sent to them (${target}). If there is nothing worth telling, reply with exactly`,
    `${HEARTBEAT_OK} and nothing is sent.`,
  ].join("\n");
  return {
    id: `${sessionKey}:${now}`,
    channel: "system",
    chatId: "heartbeat",
    senderId: "heartbeat",
    senderName: "heartbeat",
    text,
    media: [],
    isGroup: false,
    mentionsBot: true,
    receivedAt: now,
    sessionKey,
    run: { kind: "heartbeat", deliverTo: target, silentReply: HEARTBEAT_OK },
  };
}

export interface HeartbeatDeps {
  bus: Switchboard;
  inbox: { isPending(msg: Pick<InboundMessage, "channel" | "chatId" | "id">): Promise<boolean> };
  /** HEARTBEAT.md's text, read safely from the workspace; undefined when it is missing or unreadable. */
  readFile: () => string | undefined;
  /** The agent's conversation (session key) where anything worth telling goes. */
  target: string;
  sessionKey: string;
  intervalMs: number;
  log: Logger;
}

/** Every `intervalMs`, if HEARTBEAT.md lists active tasks, publishes a heartbeat turn into its own session. A heartbeat
 * that still waits for (or is in) its turn makes the next one skip, so a slow model never piles them up. */
export class Heartbeat {
  private handle?: NodeJS.Timeout;
  private last: InboundMessage | undefined;
  private running = false;

  constructor(private readonly deps: HeartbeatDeps) {}

  start(): void {
    this.running = true;
    this.arm();
  }

  stop(): void {
    this.running = false;
    clearTimeout(this.handle);
  }

  async tick(): Promise<boolean> {
    const { deps } = this;
    if (this.last && (await deps.inbox.isPending(this.last))) {
      deps.log.info("the previous heartbeat is still running; skipped this one");
      return false;
    }
    const tasks = activeTasks(deps.readFile() ?? "");
    if (tasks.length === 0) return false;
    const msg = heartbeatMessage(tasks, deps.target, Date.now(), deps.sessionKey);
    if (!(await deps.bus.publishInbound(msg))) return false;
    this.last = msg;
    return true;
  }

  private arm(): void {
    if (!this.running) return;
    const beat = () =>
      this.tick()
        .catch((err: unknown) => this.deps.log.error({ err }, "heartbeat failed"))
        .finally(() => this.arm());
    this.handle = setTimeout(beat, this.deps.intervalMs).unref();
  }
}

/** An agent's heartbeat (its `heartbeat` settings), in its own session and workspace, telling `heartbeat.target` through
 * the agent's own bot on that channel; undefined when it has none. */
export function agentHeartbeat(config: Config, deps: Pick<HeartbeatDeps, "bus" | "inbox" | "log">) {
  const { intervalMinutes, target } = config.heartbeat;
  const chat = target === undefined ? undefined : parseSessionKey(target);
  if (!intervalMinutes || !chat) return undefined;
  const { agentName: agent, workspace } = config;
  const account = chat.account ?? agentAccount(config.accounts, agent, chat.channel);
  const log = deps.log.child({ part: "heartbeat", agent });
  return new Heartbeat({
    ...deps,
    target: agentChatKey(agent, { ...chat, account }),
    sessionKey: agentSessionKey(agent, HEARTBEAT_SESSION),
    intervalMs: intervalMinutes * 60_000,
    log,
    // Read like the prompt files: no symlink out, no FIFO, size-capped.
    readFile: () => {
      const read = readTextBeneath(workspace, "HEARTBEAT.md", 64 * 1024);
      if (read.ok) return read.text;
      if (!/does not exist/.test(read.reason)) log.warn({ reason: read.reason }, "HEARTBEAT.md skipped");
    },
  });
}
