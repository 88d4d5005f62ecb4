import { createRequire } from "node:module";
import { errorText } from "../../src/bus/types.js";

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

/** The platform's own words: grammy's errors carry Telegram's code and description. */
export function describe(err: unknown): string {
  return err instanceof GrammyError ? `${err.error_code} ${err.description}` : errorText(err);
}

/** Telegram's words for an edit to what the message already shows: the edit is done. */
export const isUnchanged = (err: unknown) =>
  err instanceof GrammyError && /message is not modified/i.test(err.description);

/** A token Telegram refuses (revoked, or never valid): it needs its owner, not patience. */
export function refusedToken(err: unknown): err is InstanceType<typeof GrammyError> {
  return err instanceof GrammyError && (err.error_code === 401 || err.error_code === 404);
}
