import { join } from "node:path";
import { type InboundMessage, parseSessionKey, personOf, routeOf } from "../bus/types.js";

/** Channels reached only from this machine or with the control page's token (terminal, `system`, web chat). */
const LOCAL_CHANNELS: ReadonlySet<string> = new Set(["console", "system", "web"]);

/** Whether a person is pincer's owner (role `owner`, src/access/roles.ts): named in the bot's allowlist (`*` names
 * nobody), or on a local channel. Everyone let in by `*` or by `pincer pairing approve` gets `people.defaultRole`. */
export function isNamedOwner(channel: string, senderId: string, allowFrom: MemorySharing["allowFrom"]): boolean {
  return LOCAL_CHANNELS.has(channel) || (allowFrom[channel]?.includes(senderId) ?? false);
}

/** Who shares the owner's MEMORY.md besides the owner (config memory.shareWithGroups, memory.shareWithGuests). */
export interface MemorySharing {
  /** By route (routeOf). */
  allowFrom: Partial<Record<string, readonly string[]>>;
  shareWithGroups: boolean;
  shareWithGuests: boolean;
}

/** Whether a conversation is a direct chat with the owner: pincer's local ones (terminal, control page, its own runs)
 * and a private chat with someone named in TELEGRAM_ALLOW_FROM / DISCORD_ALLOW_FROM; people let in by pairing or `*`
 * are guests. A scheduled run or a helper's result speaks for the person it was set up by (its run's userId). */
export function isOwnersChat(msg: InboundMessage, allowFrom: MemorySharing["allowFrom"]): boolean {
  if (msg.isGroup) return false;
  const route = routeOf(parseSessionKey(msg.sessionKey) ?? msg);
  if (LOCAL_CHANNELS.has(route)) return true;
  const person = personOf(msg);
  return person !== undefined && isNamedOwner(route, person, allowFrom);
}

/** Whether a turn sees the MEMORY.md of its space (spaceOf): in a direct chat, its person's own; in a group, only the
 * owner's with memory.shareWithGroups (what all the group may see). Prompt, memory_search, the file tools, exec. */
export function seesOwnerMemory(msg: InboundMessage, sharing: MemorySharing): boolean {
  if (msg.isGroup) return sharing.shareWithGroups && spaceOwner(msg) === undefined;
  return msg.person !== undefined || sharing.shareWithGuests || isOwnersChat(msg, sharing.allowFrom);
}

/** Whose private space a run works in: a person's id, or undefined for the owner's and pincer's own runs
 * (the heartbeat), which see the whole workspace. */
export const spaceOwner = (msg: Pick<InboundMessage, "person">) =>
  msg.person && msg.person.role !== "owner" ? msg.person.id : undefined;

/** A run's workspace: the whole one for the owner, else the person's `people/<id>/` in it, their memory and files. */
export function spaceOf(msg: Pick<InboundMessage, "person">, workspace: string): string {
  const id = spaceOwner(msg);
  return id ? personSpace(workspace, id) : workspace;
}

/** A person's own folder in a workspace: what their runs work in, and what /forget deletes. */
export const personSpace = (workspace: string, id: string) => join(workspace, "people", encodeURIComponent(id));

/** The routes whose strangers are given pairing codes: a platform's bots (`telegram`, `discord@work`). */
export function isPairedChannel(route: string): boolean {
  return /^(telegram|discord)(@[a-z0-9][a-z0-9_-]{0,31})?$/.test(route);
}
