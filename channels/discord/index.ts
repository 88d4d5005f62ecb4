export { createDiscordChannel, type DiscordChannelDeps, type DiscordTuning } from "./discord-channel.js";
export { DISCORD_MESSAGE_LIMIT, splitMessage } from "./split.js";
