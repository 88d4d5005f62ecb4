import { createRequire } from "node:module";

/**
 * discord.js, required rather than imported. It is CommonJS, and importing it as an ES module makes
 * Node first scan its files for the names they export: ~50 ms and ~7 MB at every start, for
 * nothing. The adapter takes its values from here and its types from `import type … "discord.js"`.
 */
const discord = createRequire(import.meta.url)("discord.js") as typeof import("discord.js");

export const {
  Client,
  DiscordAPIError,
  Events,
  GatewayIntentBits,
  MessageFlags,
  MessageReferenceType,
  MessageType,
  Partials,
  RateLimitError,
  Routes,
  Status,
} = discord;
