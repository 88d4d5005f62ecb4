import type { Config } from "../config/config.js";
import { chainOf, type EndpointSpec } from "../llm/configured.js";
import { notFoundHint, openAIClient } from "../llm/model.js";

/** One thing `pincer doctor` checked, with one line of advice when it is not fine. */
export type Check = { name: string; status: "ok" | "warn" | "fail"; detail: string };

const TIMEOUT_MS = 10_000;

/** Asks the model endpoint for its models with the configured key, as the first turn would. */
export async function probeModel(config: Pick<Config, "openai">): Promise<Check> {
  return probeEndpoint({ ...config.openai, name: "" }, "model");
}

/** Every other model of every agent (`agent.models`, fallbacks, helper model, other agents' own), each asked with the
 * key its entry names; a check per endpoint and key, named by the agent. */
export async function probeAgentModels(config: Config): Promise<Check[]> {
  const seen = new Set([`${config.openai.model} at ${config.openai.baseUrl} ${config.openai.keyEnv}`]);
  const probes: Promise<Check>[] = [];
  for (const agent of Object.values(config.agents)) {
    const own = { ...config, ...agent };
    const choices = [undefined, ...own.agent.models.map((m) => m.name)];
    const helper = own.agent.helperModel ? [{ ...own.openai, name: "", model: own.agent.helperModel }] : [];
    for (const spec of [...choices.flatMap((choice) => chainOf(own, choice)), ...helper]) {
      const key = `${spec.model} at ${spec.baseUrl} ${spec.keyEnv}`;
      if (seen.has(key)) continue;
      seen.add(key);
      probes.push(probeEndpoint(spec, `model (agent ${agent.agentName})`));
    }
  }
  return Promise.all(probes);
}

async function probeEndpoint(spec: Omit<EndpointSpec, "name"> & { name: string }, name: string): Promise<Check> {
  const { apiKey, baseUrl, model, keyEnv } = spec;
  const check = (status: Check["status"], detail: string): Check => ({ name, status, detail });
  if (!apiKey) return check("fail", `${keyEnv} is not set: put the key for ${model} at ${baseUrl} in .env`);
  const made = await openAIClient({ apiKey, baseUrl, timeoutSeconds: TIMEOUT_MS / 1000 }).catch((err: Error) => err);
  if (made instanceof Error) return check("fail", made.message);
  const { OpenAI, client } = made;
  try {
    const ids: string[] = [];
    for await (const entry of client.models.list()) ids.push(entry.id);
    if (ids.length > 0 && !ids.includes(model)) {
      const listed = `${ids.slice(0, 5).join(", ")}${ids.length > 5 ? ", …" : ""}`;
      const what = name === "model" ? `PINCER_MODEL "${model}"` : `"${model}"`;
      return check("warn", `${baseUrl} answers, but does not list ${what}; it lists ${listed}`);
    }
    return check("ok", `${model} at ${baseUrl} answers`);
  } catch (err) {
    if (err instanceof OpenAI.AuthenticationError) {
      return check("fail", `${baseUrl} refused ${keyEnv} (401) for ${model}: check the key`);
    }
    if (err instanceof OpenAI.NotFoundError) return check("fail", notFoundHint(spec));
    const said = (err as Error).message;
    const where = name === "model" ? "OPENAI_BASE_URL" : "its baseUrl";
    return check("fail", `${baseUrl} did not answer (${said}): check ${where} and that the endpoint runs`);
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
