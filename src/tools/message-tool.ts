import { randomUUID } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import { basename, join } from "node:path";
import { BUTTON_LIMITS, MESSAGE_BUTTON_PREFIX } from "../bus/buttons.js";
import {
  agentChatKey,
  agentOf,
  type Button,
  type ChannelName,
  type DeliveryOutcome,
  MAIN_AGENT,
  type OutboundMessage,
  replyTarget,
  routeOf,
} from "../bus/types.js";
import { agentAccount } from "../config/agents.js";
import type { Config } from "../config/config.js";
import { mediaDir } from "../paths.js";
import { readInScope } from "./files/safe-io.js";
import { fileScope } from "./files/workspace-path.js";
import { objectSchema, type Tool, type ToolContext, type ToolDeps, ToolError } from "./tool.js";

type MessageArgs = {
  content: string;
  channel?: string;
  chat_id?: string;
  media?: string[];
  buttons?: string[][];
};

const MAX_FILES = 10;

const DESCRIPTION = [
  "Send a message now, without ending your turn: a note to the user during a long task, files from the workspace (`media`: workspace paths, sent as attachments),",
  "or a message to another chat (`channel` and `chat_id`; only chats the owner allowed in the config).",
  "Without channel/chat_id it goes to the current conversation. The result is the platform's answer (message id or its error).",
  "`buttons`: rows of button labels under the message; a tap comes back to you as a message `[button] Label` from whoever tapped.",
  "If you send your whole answer this way, do not repeat it in your reply.",
].join(" ");

/** Proactive messages and attachments, through the outbox like any reply. */
export function createMessageTool({ config, store }: Pick<ToolDeps, "config" | "store">): Tool<MessageArgs> {
  return {
    name: "message",
    description: DESCRIPTION,
    parameters: objectSchema(["content"], {
      content: { type: "string", description: "The text to send (markdown). May be empty when media is given." },
      channel: { type: "string", description: "telegram or discord; default: the current conversation's" },
      chat_id: {
        type: "string",
        description: "The chat (Telegram) or channel (Discord) id; default: the current one",
      },
      media: {
        type: "array",
        items: { type: "string" },
        maxItems: MAX_FILES,
        description: "Workspace paths of files to attach",
      },
      buttons: {
        type: "array",
        maxItems: BUTTON_LIMITS.rows,
        items: {
          type: "array",
          minItems: 1,
          maxItems: BUTTON_LIMITS.perRow,
          items: { type: "string", minLength: 1, maxLength: BUTTON_LIMITS.labelChars },
        },
        description: `Rows of button labels, e.g. [["Yes","No"]]: at most ${BUTTON_LIMITS.rows} rows of ${BUTTON_LIMITS.perRow}, labels up to ${BUTTON_LIMITS.labelChars} characters`,
      },
    }),
    async execute(args, ctx) {
      const media = args.media ?? [];
      if (!args.content.trim() && media.length === 0) throw new ToolError("`content` is empty and there is no media.");
      const buttons = buttonsOf(args.buttons);
      const { target, current } = resolveTarget(args, ctx, config);
      if (!ctx.bus.serves(routeOf(target))) {
        throw new ToolError(`the ${target.channel} channel is not running in this pincer, so nothing was sent.`);
      }
      const files = await snapshotFiles(media, ctx, config);
      const outcome = await ctx.bus.publishOutbound({
        ...target,
        kind: "reply",
        text: args.content,
        ...(files.length ? { media: files } : {}),
        ...(buttons ? { buttons } : {}),
      });
      const where = `${target.channel}:${target.chatId}${target.threadId ? ` (thread ${target.threadId})` : ""}`;
      if (outcome.status === "refused") throw new ToolError(`${outcome.error}. Nothing was delivered to ${where}.`);
      if (current) {
        if (outcome.status === "sent") ctx.sentToConversation?.push(args.content.trim());
      } else {
        const note = media.length ? `\n[attached: ${media.join(", ")}]` : "";
        // History starts at a user message, so a marker says where this one came from.
        const now = Date.now();
        // Into this agent's own conversation with that chat: never another agent's history.
        await store.conversations.append(agentChatKey(agentOf(ctx.sessionKey), target), [
          { role: "user", content: `[system: message tool] sent from ${ctx.sessionKey}`, createdAt: now },
          { role: "assistant", content: `${args.content}${note}`, createdAt: now },
        ]);
      }
      return describeOutcome(outcome, where);
    },
  };
}

type Target = Pick<OutboundMessage, "channel" | "chatId" | "threadId" | "account">;

/** The data names a button's place (`b:<row>.<column>`), short whatever the label; a tap reports the label. */
function buttonsOf(rows: string[][] | undefined): Button[][] | undefined {
  if (!rows || rows.length === 0) return undefined;
  const labels = rows.flat();
  if (labels.some((label) => !label.trim())) throw new ToolError("a button label is empty.");
  const twice = labels.find((label, i) => labels.indexOf(label) !== i);
  if (twice !== undefined)
    throw new ToolError(`the button label "${twice}" is used twice; a tap could not tell them apart.`);
  return rows.map((row, r) => row.map((label, c) => ({ label, data: `${MESSAGE_BUTTON_PREFIX}${r}.${c}` })));
}

/** The current conversation unless channel/chat_id name another chat, which must be allowed (the agent's own
 * `message.allowedTargets`): it is written to through this agent's bot. */
function resolveTarget(args: MessageArgs, ctx: ToolContext, config: Config): { target: Target; current: boolean } {
  const { allowedTargets } = config.message;
  const here = replyTarget(ctx.inbound);
  const channel = args.channel?.trim() || here.channel;
  const chatId = args.chat_id?.trim() || (channel === here.channel ? here.chatId : undefined);
  if (!chatId) throw new ToolError(`chat_id is needed to write to ${channel} from a ${here.channel} conversation.`);
  if (channel === here.channel && chatId === here.chatId) return { target: here, current: true };
  const agent = agentOf(ctx.sessionKey);
  if (!allowedTargets.includes(`${channel}:${chatId}`)) {
    const allowed = allowedTargets.length ? allowedTargets.join(", ") : "none";
    // The setting the user would edit: another agent's list is its own, under agents.NAME.
    const setting = `${agent === MAIN_AGENT ? "" : `agents.${agent}.`}message.allowedTargets`;
    throw new ToolError(
      `${channel}:${chatId} is not on ${setting} in the config (allowed: ${allowed}); you can only write to the current conversation and those.`,
    );
  }
  const account = channel === here.channel ? here.account : agentAccount(config.accounts, agent, channel);
  return { target: { channel: channel as ChannelName, chatId, account }, current: false };
}

/** Copies each attachment (a regular file in the workspace or media folder, no symlink out, size-capped) to its own
 * folder under media/outgoing: the channel sends that copy, so the file cannot be swapped before the send. */
async function snapshotFiles(paths: string[], ctx: ToolContext, config: Config): Promise<string[]> {
  if (paths.length === 0) return [];
  const { maxBytes } = config.media;
  // PINCER_HOME stays hidden from the paths; the copies go under its media folder.
  const scope = fileScope(ctx, config.home);
  const copies: string[] = [];
  for (const path of paths) {
    // Opened the race-free way the file tools use (files/safe-open.ts): regular files only, no link out.
    const { opened, bytes: data } = await readInScope(path, scope, { access: "read", want: "file" }, maxBytes, (o) => {
      if (o.stats.size > maxBytes) {
        throw new ToolError(`"${path}" is ${o.stats.size} bytes, more than the limit of ${maxBytes} bytes.`);
      }
    });
    const dir = join(mediaDir(config.home), "outgoing", randomUUID());
    await mkdir(dir, { recursive: true });
    const copy = join(dir, basename(opened.path));
    await writeFile(copy, data);
    copies.push(copy);
  }
  return copies;
}

function describeOutcome(outcome: DeliveryOutcome, where: string): string {
  switch (outcome.status) {
    case "sent": {
      const ids = outcome.messageIds;
      return `Sent to ${where}${ids.length ? ` (message id${ids.length > 1 ? "s" : ""} ${ids.join(", ")})` : ""}.`;
    }
    case "failed":
      return `Error: the platform did not take it yet (${outcome.error}); it stays in the outbox and is sent when ${where} can be reached again.`;
    case "queued":
      return `Queued for ${where}: the channel is not connected now; it goes out when it is.`;
    case "refused":
      return `Error: ${outcome.error}`;
  }
}
