import { createRequire } from "node:module";

/**
 * grammy and its plugins, required rather than imported. They are CommonJS, and importing them as
 * ES modules makes Node first scan their files for the names they export, at every start, for
 * nothing. The adapter takes its values from here and its types from `import type … "grammy"`.
 */
const require = createRequire(import.meta.url);
const grammy = require("grammy") as typeof import("grammy");
const retry = require("@grammyjs/auto-retry") as typeof import("@grammyjs/auto-retry");

export const { Api, Bot, Composer, Context, GrammyError, HttpError, InputFile, webhookCallback } = grammy;
export const { autoRetry } = retry;
