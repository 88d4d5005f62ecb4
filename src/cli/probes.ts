import type { Config } from "../config/config.js";
import { notFoundHint, openAIClient } from "../llm/model.js";

/** One thing `pincer doctor` checked, with one line of advice when it is not fine. */
export type Check = { name: string; status: "ok" | "warn" | "fail"; detail: string };

const TIMEOUT_MS = 10_000;

/** Asks the model endpoint for its models with the configured key, as the first turn would. */
export async function probeModel(config: Pick<Config, "openai">): Promise<Check> {
  const { apiKey, baseUrl, model } = config.openai;
  const check = (status: Check["status"], detail: string): Check => ({ name: "model", status, detail });
  if (!apiKey) return check("fail", "OPENAI_API_KEY is not set: put it in .env");
  const made = await openAIClient({ apiKey, baseUrl, timeoutSeconds: TIMEOUT_MS / 1000 }).catch((err: Error) => err);
  if (made instanceof Error) return check("fail", made.message);
  const { OpenAI, client } = made;
  try {
    const ids: string[] = [];
    for await (const entry of client.models.list()) ids.push(entry.id);
    if (ids.length > 0 && !ids.includes(model)) {
      const listed = `${ids.slice(0, 5).join(", ")}${ids.length > 5 ? ", …" : ""}`;
      return check("warn", `${baseUrl} answers, but does not list PINCER_MODEL "${model}"; it lists ${listed}`);
    }
    return check("ok", `${model} at ${baseUrl} answers`);
  } catch (err) {
    if (err instanceof OpenAI.AuthenticationError)
      return check("fail", `${baseUrl} refused OPENAI_API_KEY (401): check the key`);
    if (err instanceof OpenAI.NotFoundError) return check("fail", notFoundHint(config.openai));
    const said = (err as Error).message;
    return check("fail", `${baseUrl} did not answer (${said}): check OPENAI_BASE_URL and that the endpoint runs`);
  }
}

/** Telegram's getMe with the configured token. */
export async function probeTelegram(config: Pick<Config, "telegramToken" | "telegramApiRoot">): Promise<Check> {
  const { telegramToken: token, telegramApiRoot: root } = config;
  if (!token) return { name: "telegram", status: "warn", detail: "off: set TELEGRAM_BOT_TOKEN to enable it" };
  try {
    const response = await fetch(`${root}/bot${token}/getMe`, { signal: AbortSignal.timeout(TIMEOUT_MS) });
    type Answer = { ok?: boolean; description?: string; result?: { username?: string } };
    const body = (await response.json().catch(() => ({}))) as Answer;
    if (body.ok) return { name: "telegram", status: "ok", detail: `connected as @${body.result?.username}` };
    return {
      name: "telegram",
      status: "fail",
      detail: `Telegram refused TELEGRAM_BOT_TOKEN (${response.status} ${body.description ?? ""}): copy the token from BotFather again`,
    };
  } catch (err) {
    return { name: "telegram", status: "fail", detail: `${root} did not answer: ${(err as Error).message}` };
  }
}

/** Discord's /users/@me with the configured token. */
export async function probeDiscord(config: Pick<Config, "discordToken" | "discordApiUrl">): Promise<Check> {
  const { discordToken: token, discordApiUrl: root } = config;
  if (!token) return { name: "discord", status: "warn", detail: "off: set DISCORD_BOT_TOKEN to enable it" };
  try {
    const headers = { authorization: `Bot ${token}` };
    const response = await fetch(`${root}/v10/users/@me`, { headers, signal: AbortSignal.timeout(TIMEOUT_MS) });
    const body = (await response.json().catch(() => ({}))) as { username?: string; message?: string };
    if (response.ok) return { name: "discord", status: "ok", detail: `connected as ${body.username}` };
    return {
      name: "discord",
      status: "fail",
      detail: `Discord refused DISCORD_BOT_TOKEN (${response.status} ${body.message ?? ""}): copy the token again from the Developer Portal (Bot → Reset Token)`,
    };
  } catch (err) {
    return { name: "discord", status: "fail", detail: `${root} did not answer: ${(err as Error).message}` };
  }
}
