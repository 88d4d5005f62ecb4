import type { PairingStore } from "./pairing.js";

export type AccessDecision =
  | { allowed: true }
  /** `reply` is the one message a stranger gets (their pairing code); absent when they were told already. */
  | { allowed: false; reply?: string };

export interface AccessInput {
  channel: "telegram" | "discord";
  allowFrom: string[];
  pairing: PairingStore;
  userId: string;
  userName: string;
}

/** Allowlist first, then owner-approved users; anyone else gets a pairing code once and no model call. */
export function checkAccess({ channel, allowFrom, pairing, userId, userName }: AccessInput): AccessDecision {
  if (allowFrom.includes("*") || allowFrom.includes(userId)) return { allowed: true };
  if (pairing.isApproved(channel, userId)) return { allowed: true };
  const request = pairing.request(channel, userId, userName);
  if (!request) return { allowed: false };
  return {
    allowed: false,
    reply: [
      "Hi! I only talk to people my owner has approved.",
      `Your pairing code is ${request.code} (valid for one hour).`,
      `Ask the owner to run: pincer pairing approve ${channel} ${request.code}`,
    ].join("\n"),
  };
}
