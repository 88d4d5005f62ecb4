import { createRequire } from "node:module";

// grammy and its plugins are CommonJS: imported as ES modules, Node first scans their files for their exports at every
// start. So values come from require here, types from `import type … "grammy"`.
const require = createRequire(import.meta.url);
const grammy = require("grammy") as typeof import("grammy");
const retry = require("@grammyjs/auto-retry") as typeof import("@grammyjs/auto-retry");

export const { Api, Bot, Composer, Context, GrammyError, HttpError, InputFile, webhookCallback } = grammy;
export const { autoRetry } = retry;

/** A 429's retry_after, in milliseconds. */
export function retryAfterMs(err: unknown): number | undefined {
  const seconds = err instanceof GrammyError ? err.parameters.retry_after : undefined;
  return seconds === undefined ? undefined : seconds * 1000;
}
