import { existsSync } from "node:fs";
import type { Config } from "../config/config.js";
import { databasePath, storeLocation } from "../paths.js";
import { withStore } from "../store/open.js";
import { readUsage } from "../usage/meter.js";
import { periodsAt } from "../usage/periods.js";
import { reportText, sumsText } from "../usage/report.js";

/** `pincer usage` (`--json`): what /usage says of all chats, and this month's chats, from the database. */
export async function usageText(config: Config, json: boolean, now = Date.now()): Promise<string> {
  if (!config.databaseUrl && !existsSync(databasePath(config.home))) {
    return json ? "null" : `No database yet at ${databasePath(config.home)}: nothing was counted.`;
  }
  const { monthStart } = periodsAt(now, config.timezone);
  const [report, chats] = await withStore(storeLocation(config), (store) =>
    Promise.all([readUsage(store.usage, config.timezone, now), store.usage.chats(monthStart, 20)]),
  );
  if (json) return JSON.stringify({ ...report, chats }, null, 2);
  const lines = chats.map((c) => `  ${c.sessionKey}: ${sumsText(c)}`);
  return [reportText(report), ...(lines.length ? ["This month by chat:", ...lines] : [])].join("\n");
}
