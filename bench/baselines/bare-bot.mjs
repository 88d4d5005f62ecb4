// The baseline pincer is measured against: the least a bot can do for the same job. It receives a
// message (grammy long polling and/or a discord.js gateway client), forwards the text to the same
// OpenAI-compatible model with the openai client, and sends the answer back. No storage, no tools;
// with BARE_TOOLS_FILE (a JSON array of tool schemas, the ones pincer sent) it offers the model
// those tools in every request, so a request weighs what pincer's does.
// Plain JavaScript run by node, so no loader inflates its start time or memory.
import { readFileSync } from "node:fs";
import { Client, Events, GatewayIntentBits, Partials } from "discord.js";
import { Bot } from "grammy";
import OpenAI from "openai";

const env = process.env;
const openai = new OpenAI({ apiKey: env.OPENAI_API_KEY, baseURL: env.OPENAI_BASE_URL, maxRetries: 0 });
const tools = env.BARE_TOOLS_FILE ? JSON.parse(readFileSync(env.BARE_TOOLS_FILE, "utf8")) : undefined;
const ask = async (text) => {
  const response = await openai.chat.completions.create({
    model: "gpt-4.1-mini",
    messages: [{ role: "user", content: text }],
    ...(tools ? { tools } : {}),
  });
  return response.choices[0]?.message.content || "…";
};

if (env.TELEGRAM_BOT_TOKEN) {
  const bot = new Bot(env.TELEGRAM_BOT_TOKEN, { client: { apiRoot: env.TELEGRAM_API_ROOT } });
  bot.on("message:text", async (ctx) => ctx.reply(await ask(ctx.message.text)));
  bot.catch((err) => console.error(err.message));
  void bot.start({ timeout: 30 });
}
if (env.DISCORD_BOT_TOKEN) {
  const client = new Client({
    intents: [
      GatewayIntentBits.Guilds,
      GatewayIntentBits.GuildMessages,
      GatewayIntentBits.MessageContent,
      GatewayIntentBits.DirectMessages,
    ],
    partials: [Partials.Channel],
    rest: { api: env.DISCORD_API_URL },
  });
  client.on(Events.MessageCreate, async (message) => {
    if (message.author.bot) return;
    await message.reply(await ask(message.content)).catch((err) => console.error(err.message));
  });
  void client.login(env.DISCORD_BOT_TOKEN);
}
process.on("SIGTERM", () => process.exit(0));
