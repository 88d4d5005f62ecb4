import { existsSync } from "node:fs";
import type { Logger } from "pino";
import { type Config, type LoadOptions, loadConfig } from "../config/config.js";
import { createLogger } from "../log.js";

/** Reads `.env` from the working directory (variables already set win: systemd's Environment= and a shell's export
 * override the file) and the configuration; a problem with it is a ConfigError, which main.ts says in its sentence. */
export function loadFromEnv(options: LoadOptions = {}): { config: Config; log: Logger } {
  if (existsSync(".env")) process.loadEnvFile(".env");
  const config = loadConfig(process.env, options);
  return { config, log: createLogger(config.logLevel) };
}

/** Stops the app once on SIGINT/SIGTERM, so systemd's stop and Ctrl-C leave nothing half-done. */
export function onShutdown(stop: () => Promise<void>, log: Logger): void {
  let stopping = false;
  const handler = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, "shutting down");
    stop().then(
      () => process.exit(0),
      (err) => {
        log.error({ err }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  process.once("SIGINT", () => handler("SIGINT"));
  process.once("SIGTERM", () => handler("SIGTERM"));
}
