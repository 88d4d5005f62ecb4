import { isAbsolute, join, resolve } from "node:path";
import { MAIN_AGENT, routeOf } from "../bus/types.js";
import { AGENT_SECTIONS, type FileConfig } from "./file-schema.js";

export type Env = Record<string, string | undefined>;
/** A model endpoint and its key; `keyEnv` names the variable the key came from (for `pincer doctor`). */
type Endpoint = { apiKey: string; baseUrl: string; model: string; keyEnv: string };

/** One agent as the rest of pincer reads it: spread over the top-level config, it is that agent's config. */
export type AgentSettings = Pick<FileConfig, (typeof AGENT_SECTIONS)[number]> & {
  agentName: string;
  workspace: string;
  openai: Endpoint;
  /** The agent's own model keys by variable name (`apiKeyEnv`), never in `process.env` after the start. */
  keys: Record<string, string>;
};

/** One bot: the default account (TELEGRAM_BOT_TOKEN, DISCORD_BOT_TOKEN) has no `account`. */
export interface Account {
  channel: "telegram" | "discord";
  account?: string;
  token: string;
  agent: string;
  allowFrom: readonly string[];
}

/** A problem worded as the end of one sentence; the caller says where. */
export class SettingProblem extends Error {}

/** `agents.NAME.model` as the agent's endpoint: a name on the default endpoint, or its own one with its own key. */
export function agentEndpoint(
  env: Env,
  base: Endpoint,
  model: FileConfig["agents"][string]["model"],
  where: string,
  required: boolean,
) {
  if (model === undefined) return { openai: base, keys: {} };
  if (typeof model === "string") return { openai: { ...base, model }, keys: {} };
  const keys = keysOf(env, [model], where, required);
  const [apiKey, keyEnv] = model.apiKeyEnv
    ? [keys[model.apiKeyEnv] ?? "", model.apiKeyEnv]
    : [base.apiKey, base.keyEnv];
  const baseUrl = (model.baseUrl ?? base.baseUrl).replace(/\/+$/, "");
  return { openai: { apiKey, baseUrl, model: model.name, keyEnv }, keys };
}

/** The keys `apiKeyEnv` names in `entries`, read from the environment; an unset one is a problem when `required` (else
 * it is left out, for `pincer doctor` to name). */
export function keysOf(
  env: Env,
  entries: readonly { apiKeyEnv?: string }[],
  where: string,
  required: boolean,
): Record<string, string> {
  const keys: Record<string, string> = {};
  for (const { apiKeyEnv } of entries) {
    if (apiKeyEnv === undefined) continue;
    const value = env[apiKeyEnv]?.trim();
    if (value) keys[apiKeyEnv] = value;
    else if (required) {
      throw new SettingProblem(`${where} names apiKeyEnv ${apiKeyEnv}, which is not set in the environment`);
    }
  }
  return keys;
}

/** An agent's workspace: as set (a relative path from the config file's folder), else its own folder in the home. */
export function agentWorkspace(home: string, configDir: string, name: string, set: string | undefined): string {
  if (set) return isAbsolute(set) ? set : resolve(configDir, set);
  return join(home, "agents", name, "workspace");
}

/** The raw file with an agent's overrides merged into its sections, for the validator to fill and check again. */
export function mergedFile(raw: Record<string, unknown>, overrides: Record<string, unknown>): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...structuredClone(raw), agents: {}, accounts: {}, bindings: [] };
  for (const section of AGENT_SECTIONS) {
    const own = overrides[section];
    if (own !== undefined) merged[section] = { ...(raw[section] as object | undefined), ...structuredClone(own) };
  }
  return merged;
}

/** `accounts.*` and the default tokens as bots; a problem names the setting. `tokenShape` checks a token. */
export function accountsOf(
  env: Env,
  file: Pick<FileConfig, "accounts">,
  defaults: { channel: Account["channel"]; token?: string; allowFrom: readonly string[] }[],
  tokenShape: (channel: Account["channel"], variable: string, value: string) => void,
): Account[] {
  const accounts: Account[] = defaults.flatMap(({ channel, token, allowFrom }) =>
    token ? [{ channel, token, agent: MAIN_AGENT, allowFrom }] : [],
  );
  for (const { channel, allowFrom } of defaults) {
    for (const [account, set] of Object.entries(file.accounts[channel])) {
      const where = `accounts.${channel}.${account}`;
      if (account === "default") {
        throw new SettingProblem(`${where}: "default" is the account of the ${channel.toUpperCase()}_BOT_TOKEN`);
      }
      const token = env[set.tokenEnv]?.trim();
      if (!token) throw new SettingProblem(`${where}.tokenEnv ${set.tokenEnv} is not set in the environment`);
      tokenShape(channel, set.tokenEnv, token);
      const same = accounts.find((a) => a.token === token);
      if (same) throw new SettingProblem(`${where} has the same token as ${describeAccount(same)}`);
      accounts.push({ channel, account, token, agent: set.agent ?? MAIN_AGENT, allowFrom: set.allowFrom ?? allowFrom });
    }
  }
  return accounts;
}

/** Each bot's allowlist by route (routeOf): an account's `allowFrom`, else its channel's `*_ALLOW_FROM`. */
export function allowListsOf(config: {
  telegramAllowFrom: readonly string[];
  discordAllowFrom: readonly string[];
  accounts: readonly Account[];
}): Record<string, readonly string[]> {
  const named = config.accounts.filter((a) => a.account).map((a) => [routeOf(a), a.allowFrom] as const);
  return { telegram: config.telegramAllowFrom, discord: config.discordAllowFrom, ...Object.fromEntries(named) };
}

/** The agent of the bot a message came to (the fallback of `bindings`): its account's, main for a default bot. */
export function accountAgent(accounts: readonly Account[], msg: { channel: string; account?: string }): string {
  return accounts.find((a) => a.channel === msg.channel && a.account === msg.account)?.agent ?? MAIN_AGENT;
}

/** The bot `agent` speaks through on `channel` unasked (heartbeat, `message`): its first account there, else the default. */
export const agentAccount = (accounts: readonly Account[], agent: string, channel: string): string | undefined =>
  accounts.find((a) => a.channel === channel && a.agent === agent)?.account;

const describeAccount = (a: Pick<Account, "channel" | "account">) =>
  a.account ? `accounts.${a.channel}.${a.account}` : `${a.channel.toUpperCase()}_BOT_TOKEN`;

/** What the schema cannot say about `bindings` and the accounts' agents: each names a known agent and account. */
export function routingProblem(file: Pick<FileConfig, "accounts" | "bindings">, agents: readonly string[]) {
  for (const channel of ["telegram", "discord"] as const) {
    for (const [account, { agent }] of Object.entries(file.accounts[channel])) {
      if (agent !== undefined && !agents.includes(agent)) {
        return `accounts.${channel}.${account}.agent "${agent}" is not an agent (agents: ${agents.join(", ")})`;
      }
    }
  }
  for (const [i, b] of file.bindings.entries()) {
    const where = `bindings[${i}]`;
    if (!agents.includes(b.agent)) return `${where}.agent "${b.agent}" is not an agent (agents: ${agents.join(", ")})`;
    if (b.account !== undefined && b.account !== "default" && !file.accounts[b.channel][b.account]) {
      return `${where}.account "${b.account}" is not in accounts.${b.channel}`;
    }
    if (b.guild !== undefined && b.channel !== "discord") return `${where}.guild is only for discord`;
  }
}

/** The agents, their bots with `stateOf` each (connected or not) and the bindings, as `pincer status` and the control
 * page list them. */
export function agentsOverview(
  config: { agents: Record<string, AgentSettings>; accounts: readonly Account[] } & Pick<FileConfig, "bindings">,
  stateOf: (route: string) => string,
) {
  return {
    agents: Object.values(config.agents).map(({ agentName, workspace, openai }) => {
      return { name: agentName, workspace, model: `${openai.model} at ${openai.baseUrl}` };
    }),
    accounts: config.accounts.map((a) => ({ route: routeOf(a), agent: a.agent, state: stateOf(routeOf(a)) })),
    bindings: config.bindings.map(({ agent, channel, ...where }) =>
      [channel, ...Object.entries(where).map((field) => field.join(" ")), "→", agent].join(" "),
    ),
  };
}
