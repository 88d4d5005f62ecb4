import { join, resolve } from "node:path";
import type { Config } from "../config/config.js";
import { packageRoot } from "../paths.js";
import { copyIfAbsent, ensureHome } from "../setup/ensure-home.js";

/** `pincer onboard`: creates PINCER_HOME, the workspace and a `.env`, overwriting nothing. */
export function runOnboard(config: Config, envPath = resolve(".env")): string[] {
  const created = ensureHome(config);
  const envCreated = copyIfAbsent(join(packageRoot(), ".env.example"), envPath);
  return [
    `PINCER_HOME: ${config.home}`,
    `workspace:   ${config.workspace}${created.length ? ` (${created.length} files from the template)` : " (kept as it is)"}`,
    `.env:        ${envPath} ${envCreated ? "created from .env.example" : "exists, left alone"}`,
    "",
    "Next:",
    `  1. Put OPENAI_API_KEY (and OPENAI_BASE_URL for another endpoint) in ${envPath}.`,
    "  2. Add TELEGRAM_BOT_TOKEN and/or DISCORD_BOT_TOKEN (see docs/channels.md).",
    "  3. Edit SOUL.md and USER.md in the workspace to make pincer yours.",
    "  4. Run `pincer doctor`, then `npm start` (or `pincer gateway`).",
  ];
}
