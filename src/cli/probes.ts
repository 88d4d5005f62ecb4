import type { Config } from "../config/config.js";
import { chainOf, type EndpointSpec } from "../llm/configured.js";
import { notFoundHint } from "../llm/model.js";

/** One thing `pincer doctor` checked, with one line of advice when it is not fine. */
export type Check = { name: string; status: "ok" | "warn" | "fail"; detail: string };

export const check = (name: string, status: Check["status"], detail: string): Check => ({ name, status, detail });

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
  if (!apiKey) return check(name, "fail", `${keyEnv} is not set: put the key for ${model} at ${baseUrl} in .env`);
  const where = name === "model" ? "OPENAI_BASE_URL" : "its baseUrl";
  const failed = (why: string) =>
    check(name, "fail", `${baseUrl} did not answer (${why}): check ${where} and that the endpoint runs`);
  // Plain fetch: the gateway probes at start, and the openai package (~13 MB) is left to the first turn.
  const response = await fetch(`${baseUrl.replace(/\/+$/, "")}/models`, {
    headers: { authorization: `Bearer ${apiKey}` },
    signal: AbortSignal.timeout(TIMEOUT_MS),
  }).catch((err: Error) => err);
  if (response instanceof Error) return failed(response.message);
  if (response.status === 401)
    return check(name, "fail", `${baseUrl} refused ${keyEnv} (401) for ${model}: check the key`);
  if (response.status === 404) return check(name, "fail", notFoundHint(spec));
  if (!response.ok) return failed(`${response.status} ${response.statusText}`);
  const { data } = (await response.json().catch(() => ({}))) as { data?: unknown };
  const ids = (Array.isArray(data) ? data : []).map((entry) => entry?.id).filter((id) => typeof id === "string");
  if (ids.length > 0 && !ids.includes(model)) {
    const shown = `${ids.slice(0, 5).join(", ")}${ids.length > 5 ? ", …" : ""}`;
    const what = name === "model" ? `PINCER_MODEL "${model}"` : `"${model}"`;
    return check(name, "warn", `${baseUrl} answers, but does not list ${what}; it lists ${shown}`);
  }
  return check(name, "ok", `${model} at ${baseUrl} answers`);
}

type BotAnswer = { ok?: boolean; description?: string; message?: string; username?: string; result?: BotAnswer };

/** Telegram's getMe or Discord's /users/@me with the configured token. */
export async function probeBot(config: Config, name: "telegram" | "discord"): Promise<Check> {
  const telegram = name === "telegram";
  const [token, root] = telegram
    ? [config.telegramToken, config.telegramApiRoot]
    : [config.discordToken, config.discordApiUrl];
  const variable = `${name.toUpperCase()}_BOT_TOKEN`;
  if (!token) return check(name, "warn", `off: set ${variable} to enable it`);
  try {
    const url = telegram ? `${root}/bot${token}/getMe` : `${root}/v10/users/@me`;
    const headers = telegram ? undefined : { authorization: `Bot ${token}` };
    const response = await fetch(url, { headers, signal: AbortSignal.timeout(TIMEOUT_MS) });
    const body = (await response.json().catch(() => ({}))) as BotAnswer;
    // Telegram says `ok` in the body and the bot in `result`; Discord answers with the bot itself.
    const me = telegram ? body.ok && `@${body.result?.username}` : response.ok && `${body.username}`;
    if (me) return check(name, "ok", `connected as ${me}`);
    const [platform, said] = [telegram ? "Telegram" : "Discord", body.description ?? body.message ?? ""];
    const advice = telegram
      ? "copy the token from BotFather again"
      : "copy the token again from the Developer Portal (Bot → Reset Token)";
    return check(name, "fail", `${platform} refused ${variable} (${response.status} ${said}): ${advice}`);
  } catch (err) {
    return check(name, "fail", `${root} did not answer: ${(err as Error).message}`);
  }
}
