import { isPairedChannel } from "../access/policy.js";
import { allowListsOf } from "../config/agents.js";
import type { Config } from "../config/config.js";
import { storeLocation } from "../paths.js";
import { withStore } from "../store/open.js";

/** `pincer pairing list`: open codes and approved users. */
export async function pairingList(config: Config): Promise<string> {
  return withStore(storeLocation(config), async ({ pairing }) => {
    const [pending, approved] = await Promise.all([pairing.pending(), pairing.approved()]);
    return [
      pending.length === 0 ? "No pending pairing requests." : "Pending pairing requests:",
      ...pending.map(
        (p) =>
          `  ${p.channel} ${p.code}  ${p.userName} (id ${p.userId}), expires ${new Date(p.expiresAt).toISOString()}`,
      ),
      approved.length === 0 ? "No approved users." : "Approved users:",
      ...approved.map((a) => `  ${a.channel} ${a.userName} (id ${a.userId})`),
    ].join("\n");
  });
}

type Answer = { ok: boolean; text: string };
const UNKNOWN_CHANNEL = (channel: string) => ({
  ok: false,
  text: `Unknown channel "${channel}": use telegram or discord (telegram@ACCOUNT for a bot of config accounts).`,
});

/** `pincer pairing approve CHANNEL CODE`; the user's jobs paused by an earlier revoke run again. */
export async function pairingApprove(config: Config, channel: string, code: string): Promise<Answer> {
  if (!isPairedChannel(channel)) return UNKNOWN_CHANNEL(channel);
  const approved = await withStore(storeLocation(config), (store) => store.pairing.approve(channel, code));
  if (!approved) {
    return { ok: false, text: `No valid pairing code ${code} on ${channel} (codes expire after an hour).` };
  }
  const { user, resumedJobs } = approved;
  const jobs = resumedJobs > 0 ? ` Resumed ${resumedJobs} paused job${resumedJobs === 1 ? "" : "s"}.` : "";
  return { ok: true, text: `Approved ${user.userName} (id ${user.userId}) on ${channel}.${jobs}` };
}

/** `pincer pairing revoke CHANNEL USER`: takes back an approval and pauses the user's jobs (the allowlist still lets them in). */
export async function pairingRevoke(config: Config, channel: string, userId: string): Promise<Answer> {
  if (!isPairedChannel(channel)) return UNKNOWN_CHANNEL(channel);
  const allowFrom = allowListsOf(config)[channel] ?? [];
  const [platform, account] = channel.split("@");
  const variable = account ? `accounts.${platform}.${account}.allowFrom` : `${platform.toUpperCase()}_ALLOW_FROM`;
  const { revoked, pausedJobs: paused } = await withStore(storeLocation(config), (store) =>
    store.pairing.revoke(channel, userId, Date.now()),
  );
  const lines = [
    revoked ? `Revoked the approval of ${userId} on ${channel}.` : `${userId} was not an approved user on ${channel}.`,
    `Paused ${paused} job${paused === 1 ? "" : "s"} they created.`,
  ];
  const listed = allowFrom.includes(userId) || allowFrom.includes("*");
  if (listed) lines.push(`They still have access through ${variable}: remove them there and restart pincer.`);
  return { ok: (revoked || paused > 0) && !listed, text: lines.join("\n") };
}
