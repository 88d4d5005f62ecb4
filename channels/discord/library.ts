import { createRequire } from "node:module";

// discord.js is CommonJS: imported as an ES module, Node first scans its files for their exports (~50 ms and ~7 MB at
// every start). So values come from require here, types from `import type … "discord.js"`.
const discord = createRequire(import.meta.url)("discord.js") as typeof import("discord.js");

export const {
  Client,
  DiscordAPIError,
  Events,
  MessageFlags,
  MessageReferenceType,
  MessageType,
  Partials,
  RateLimitError,
  Routes,
  Status,
} = discord;
