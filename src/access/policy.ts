import type { ChannelName } from "../bus/types.js";

/**
 * Channels reached only from this machine or through the control page's token: the terminal,
 * the scheduler and helpers (`system`) and the web chat. Anyone else is checked.
 */
const LOCAL_CHANNELS: ReadonlySet<string> = new Set(["console", "system", "web"]);

export interface AccessFacts {
  channel: ChannelName;
  senderId: string;
  /** Comma list from TELEGRAM_ALLOW_FROM / DISCORD_ALLOW_FROM; `*` lets everyone in. */
  allowFrom: readonly string[] | undefined;
  /** Asked only when the allowlist says no (it reads the database). */
  isApproved: () => Promise<boolean>;
}

/** Whether a person may talk to the agent (and own jobs): local channels, the allowlist, then approvals. */
export async function hasAccess({ channel, senderId, allowFrom, isApproved }: AccessFacts): Promise<boolean> {
  if (LOCAL_CHANNELS.has(channel)) return true;
  if (allowFrom?.includes("*") || allowFrom?.includes(senderId)) return true;
  return isApproved();
}

export type StrangerAction = "send-code" | "stay-silent";

/**
 * What a stranger in a private chat gets: their code, repeated at most every `repeatAfterMs`.
 * (In a group the gate says nothing and opens no request: anyone there could make the bot talk.)
 */
export function strangerAction(input: {
  isNew: boolean;
  toldAt?: number;
  now: number;
  repeatAfterMs: number;
}): StrangerAction {
  if (input.isNew || input.toldAt === undefined) return "send-code";
  return input.now - input.toldAt >= input.repeatAfterMs ? "send-code" : "stay-silent";
}

export function pairingNotice(channel: string, code: string): string {
  return [
    "Hi! I only talk to people my owner has approved.",
    `Your pairing code is ${code} (valid for one hour).`,
    `Ask the owner to run: pincer pairing approve ${channel} ${code}`,
  ].join("\n");
}
