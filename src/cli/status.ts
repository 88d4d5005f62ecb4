import { existsSync, statSync } from "node:fs";
import type { Config } from "../config/config.js";
import { databasePath } from "../paths.js";
import { withDatabase } from "../store/database.js";

/** `pincer status`: what is stored and what is waiting, read straight from the database. */
export function statusText(config: Config): string {
  const path = databasePath(config.home);
  if (!existsSync(path)) return `No database yet at ${path}: pincer has not run with PINCER_HOME=${config.home}.`;
  return withDatabase(path, (db) => {
    const count = (sql: string) => db.prepare(sql).pluck().get() as number;
    const lastTool = db.prepare("SELECT tool, ok, created_at AS at FROM tool_audit ORDER BY id DESC LIMIT 1").get() as
      | { tool: string; ok: number; at: number }
      | undefined;
    return [
      `home:          ${config.home}`,
      `workspace:     ${config.workspace}`,
      `database:      ${path} (${(statSync(path).size / 1024).toFixed(0)} KiB)`,
      `model:         ${config.openai.model} at ${config.openai.baseUrl}`,
      `channels:      telegram ${config.telegramToken ? "on" : "off"}, discord ${config.discordToken ? "on" : "off"}`,
      `conversations: ${count("SELECT count(*) FROM conversations WHERE archived_at IS NULL")} open, ${count("SELECT count(*) FROM messages")} messages`,
      `waiting:       ${count("SELECT count(*) FROM inbox WHERE status = 'pending'")} inbound, ${count("SELECT count(*) FROM outbox WHERE status = 'pending'")} outbound`,
      `tool calls:    ${count("SELECT count(*) FROM tool_audit")}${lastTool ? `, last ${lastTool.tool} ${lastTool.ok ? "ok" : "failed"} at ${new Date(lastTool.at).toISOString()}` : ""}`,
    ].join("\n");
  });
}
