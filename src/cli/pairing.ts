import { PairingStore } from "../access/pairing.js";
import type { Config } from "../config/config.js";
import { databasePath } from "../paths.js";
import { withDatabase } from "../store/database.js";

/** `pincer pairing list`: open codes and approved users. */
export function pairingList(config: Config): string {
  return withDatabase(databasePath(config.home), (db) => {
    const store = new PairingStore(db);
    const pending = store.pending();
    const approved = store.approved();
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

/** `pincer pairing approve CHANNEL CODE`; returns the message and whether it worked. */
export function pairingApprove(config: Config, channel: string, code: string): { ok: boolean; text: string } {
  if (channel !== "telegram" && channel !== "discord") {
    return { ok: false, text: `Unknown channel "${channel}": use telegram or discord.` };
  }
  const approved = withDatabase(databasePath(config.home), (db) => new PairingStore(db).approve(channel, code));
  return approved
    ? { ok: true, text: `Approved ${approved.userName} (id ${approved.userId}) on ${channel}.` }
    : { ok: false, text: `No valid pairing code ${code} on ${channel} (codes expire after an hour).` };
}
