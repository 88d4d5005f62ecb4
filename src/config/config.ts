import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { MAIN_AGENT, parseSessionKey } from "../bus/types.js";
import {
  type AgentSettings,
  accountsOf,
  agentEndpoint,
  agentWorkspace,
  type Env,
  keysOf,
  mergedFile,
  routingProblem,
  SettingProblem,
} from "./agents.js";
import { databaseUrl } from "./database-url.js";
import { ConfigError } from "./errors.js";
import type { FileConfig } from "./file-schema.js";
import { fileValidator } from "./file-validator.js";
import { resolveMcpSettings } from "./mcp-settings.js";
import { isHttpUrl, webSettings } from "./web.js";

export { ConfigError } from "./errors.js";
export type Config = ReturnType<typeof loadConfig>;
export type WebAddr = { host: string; port: number };

const DEFAULT_MODEL = "gpt-4.1-mini";
const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"];

/** `requireApiKey: false` for commands that never call the model (onboard, doctor, cron, pairing). */
export type LoadOptions = { requireApiKey?: boolean };

/** Reads the environment and the optional JSON file (`.env` is the caller's); throws ConfigError for the first problem. */
export function loadConfig(env: Env, options: LoadOptions = {}) {
  const apiKey = env.OPENAI_API_KEY?.trim() ?? "";
  if (options.requireApiKey !== false && !apiKey) {
    throw new ConfigError(
      `OPENAI_API_KEY is not set: put your model endpoint's key in ${resolve(".env")} (pincer reads .env from the folder it is started in) or the environment (any non-empty value for a local endpoint).`,
    );
  }
  const home = resolve(expandHome(env.PINCER_HOME || join(homedir(), ".pincer")));
  const configFile = resolve(expandHome(env.PINCER_CONFIG || join(home, "config.json")));
  const sandbox = env.PINCER_SANDBOX || "bwrap";
  if (sandbox !== "bwrap" && sandbox !== "none") {
    throw new ConfigError(`PINCER_SANDBOX must be "bwrap" or "none", not "${sandbox}".`);
  }
  const timezone = env.PINCER_TIMEZONE || Intl.DateTimeFormat().resolvedOptions().timeZone;
  if (!isValidTimeZone(timezone)) {
    throw new ConfigError(`PINCER_TIMEZONE "${timezone}" is not an IANA time zone such as Europe/Berlin.`);
  }
  const logLevel = env.LOG_LEVEL || "info";
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(", ")}, not "${logLevel}".`);
  }
  const { file, raw } = readConfigFile(configFile, Boolean(env.PINCER_CONFIG));
  const model = env.PINCER_MODEL || DEFAULT_MODEL;
  const problem = fileProblem(file, model);
  if (problem) throw new ConfigError(`PINCER_CONFIG file ${configFile}: ${problem}`);
  const baseUrl = url(env, "OPENAI_BASE_URL", "https://api.openai.com/v1");
  const openai = { apiKey, baseUrl, model, keyEnv: "OPENAI_API_KEY" };
  const workspace = resolve(expandHome(env.PINCER_WORKSPACE || join(home, "workspace")));
  const [telegram, discord] = (["telegram", "discord"] as const).map((channel) => {
    const variable = `${channel.toUpperCase()}_BOT_TOKEN`;
    const token = env[variable]?.trim() || undefined;
    if (token) tokenShape(channel, variable, token);
    return { channel, token, allowFrom: allowList(env, `${channel.toUpperCase()}_ALLOW_FROM`) };
  });
  const required = options.requireApiKey !== false;
  const { agents, accounts } = inFile(configFile, () => {
    const agents = agentsOf(env, { raw, file, home, configFile, openai, workspace, required });
    const accounts = accountsOf(env, file, [telegram, discord], tokenShape);
    const routing = routingProblem(file, Object.keys(agents));
    if (routing) throw new SettingProblem(routing);
    return { agents, accounts };
  });
  const secrets = [
    ...Object.values(agents).flatMap((a) => Object.keys(a.keys)),
    ...(["telegram", "discord"] as const).flatMap((c) => Object.values(file.accounts[c]).map((a) => a.tokenEnv)),
  ];
  return {
    ...file,
    ...agents[MAIN_AGENT],
    /** Every agent's settings by name (`main` always there); `{...config, ...agents[NAME]}` is that agent's config. */
    agents,
    /** Every bot, the default accounts first. */
    accounts,
    /** The variables holding agents' keys and accounts' tokens: taken out of `process.env` once read (cli/main.ts). */
    secrets,
    telegram: telegramSettings(env, file.telegram),
    web: webSettings(env, file.web),
    telegramToken: telegram.token,
    telegramApiRoot: url(env, "TELEGRAM_API_ROOT", "https://api.telegram.org"),
    telegramAllowFrom: telegram.allowFrom,
    discordToken: discord.token,
    discordApiUrl: url(env, "DISCORD_API_URL", "https://discord.com/api"),
    discordAllowFrom: discord.allowFrom,
    home,
    configFile,
    sandbox,
    timezone,
    logLevel,
    ...controlPageSettings(env),
    /** PINCER_DATABASE_URL: clustered mode on PostgreSQL; undefined for the embedded SQLite file. */
    databaseUrl: databaseUrl(env.PINCER_DATABASE_URL),
  };
}

/** PINCER_WEB_ADDR (`host:port`, `[v6]:port` or `off`: no `webAddr`); a non-loopback address needs PINCER_WEB_TOKEN. */
function controlPageSettings(env: Env): { webAddr?: WebAddr; webToken?: string } {
  const raw = env.PINCER_WEB_ADDR?.trim() || "127.0.0.1:7390";
  const webToken = env.PINCER_WEB_TOKEN?.trim() || undefined;
  if (webToken !== undefined && webToken.length < 16) {
    throw new ConfigError("PINCER_WEB_TOKEN must be at least 16 characters long (or unset, to have one generated).");
  }
  if (raw === "off") return { webToken };
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:\s]+)):(\d{1,5})$/.exec(raw);
  const port = Number(m?.[3]);
  if (!m || port > 65535) {
    throw new ConfigError(`PINCER_WEB_ADDR must be host:port (like 127.0.0.1:7390) or off, not "${raw}".`);
  }
  const host = m[1] ?? m[2];
  if (!isLoopback(host) && !webToken) {
    throw new ConfigError(
      `PINCER_WEB_ADDR ${raw} is reachable from other machines: set PINCER_WEB_TOKEN too, or use 127.0.0.1.`,
    );
  }
  return { webAddr: { host, port }, webToken };
}

export function isLoopback(host: string): boolean {
  return host === "localhost" || host === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/** TELEGRAM_WEBHOOK_URL / _SECRET / _PORT override the config file's telegram.webhook* settings. */
function telegramSettings(env: Env, fromFile: FileConfig["telegram"]): FileConfig["telegram"] {
  const settings = { ...fromFile };
  if (env.TELEGRAM_WEBHOOK_URL?.trim()) settings.webhookUrl = url(env, "TELEGRAM_WEBHOOK_URL", "");
  if (env.TELEGRAM_WEBHOOK_SECRET?.trim()) settings.webhookSecret = env.TELEGRAM_WEBHOOK_SECRET.trim();
  if (settings.webhookSecret !== undefined && !/^[A-Za-z0-9_-]{1,256}$/.test(settings.webhookSecret)) {
    throw new ConfigError("TELEGRAM_WEBHOOK_SECRET may only use A-Z, a-z, 0-9, _ and - (1 to 256 characters).");
  }
  const port = env.TELEGRAM_WEBHOOK_PORT?.trim();
  if (port) {
    const n = Number(port);
    if (!Number.isInteger(n) || n < 1 || n > 65535) {
      throw new ConfigError(`TELEGRAM_WEBHOOK_PORT must be a port number from 1 to 65535, not "${port}".`);
    }
    settings.webhookPort = n;
  }
  return settings;
}

/** What the schema cannot say about the file (said after "PINCER_CONFIG file PATH: "), the first problem found. */
function fileProblem(file: FileConfig, model: string): string | undefined {
  const never = file.cron.tools?.find((name) => name === "cron" || name === "spawn");
  if (never) return `cron.tools may not list "${never}": a scheduled run never creates jobs or starts helpers.`;
  const role = file.people.defaultRole;
  if (!["owner", "member", "guest"].includes(role) && !file.roles[role])
    return `people.defaultRole "${role}" is not a role.`;
  return targetProblem(file) ?? modelsProblem(file) ?? pricesProblem(file, model) ?? voiceProblem(file);
}

/** voice.tts is the endpoint's (`model` and `voice`) or a command's, which writes to `{out}`; voice.stt reads `{in}`. */
function voiceProblem({ voice: { tts, stt } }: FileConfig): string | undefined {
  if (tts?.command && tts.model) return "voice.tts takes either a command or a model, not both.";
  if (tts && !tts.command && !(tts.model && tts.voice))
    return 'voice.tts needs "model" and "voice" (the endpoint\'s /v1/audio/speech) or a "command".';
  if (tts?.command && !tts.command.some((arg) => arg.includes("{out}")))
    return 'voice.tts.command must name the audio file it writes as "{out}".';
  if (stt && !stt.command.some((arg) => arg.includes("{in}")))
    return 'voice.stt.command must name the recording it reads as "{in}".';
}

/** message.allowedTargets and heartbeat.target name chats as `channel:chatId` (a session key). */
function targetProblem({ heartbeat: { intervalMinutes, target }, message }: FileConfig): string | undefined {
  const named = message.allowedTargets.map((t) => [`message.allowedTargets entry "${t}"`, t]);
  if (target !== undefined) named.push([`heartbeat.target "${target}"`, target]);
  const bad = named.find(([, value]) => (parseSessionKey(value)?.channel ?? "system") === "system");
  if (bad) return `${bad[0]} must look like "telegram:CHAT_ID" or "discord:CHANNEL_ID".`;
  if (intervalMinutes !== undefined && target === undefined) {
    return "heartbeat.target must name the chat for heartbeat messages when heartbeat.intervalMinutes is set.";
  }
}

/** `/model NAME` finds a model by name or label in any case: each names one model, and "default" is taken. */
function modelsProblem({ agent }: FileConfig): string | undefined {
  const seen = new Set<string>();
  for (const { name, label } of agent.models) {
    if (/\s/.test(name)) return `agent.models name "${name}" has a space.`;
    for (const word of new Set([name, label?.trim()].flatMap((w) => (w === undefined ? [] : [w.toLowerCase()])))) {
      if (word === "default") return `agent.models "${word}" is what /model default means; rename one.`;
      if (seen.has(word)) return `agent.models "${word}" names two models (in any case); rename one.`;
      seen.add(word);
    }
  }
}

/** A cost budget is kept only where costs are known: every configured model needs a price then. */
function pricesProblem({ usage, agent }: FileConfig, model: string): string | undefined {
  const budget = (["monthlyCost", "chatMonthlyCost"] as const).find((limit) => usage[limit] !== undefined);
  const fallbacks = agent.fallbackModels.map((f) => (typeof f === "string" ? f : f.model));
  const models = [model, ...fallbacks, agent.helperModel, ...agent.models.map((m) => m.name)];
  const unpriced = models.find((name) => name !== undefined && !usage.prices[name]);
  if (budget && unpriced) {
    return `usage.${budget} is set, so usage.prices needs a price for "${unpriced}" (its cost would be unknown).`;
  }
}

/** Each agent's settings: the top-level sections with its overrides merged in (checked as the file is), its endpoint,
 * workspace and keys. An agent's MCP servers cannot name another agent's key variables. */
function agentsOf(
  env: Env,
  input: { raw: Record<string, unknown>; file: FileConfig; home: string; configFile: string; required: boolean } & {
    openai: AgentSettings["openai"];
    workspace: string;
  },
): Record<string, AgentSettings> {
  const { raw, file, home, configFile, required } = input;
  const dir = dirname(configFile);
  const names = [MAIN_AGENT, ...Object.keys(file.agents).filter((name) => name !== MAIN_AGENT)];
  const agents: Record<string, AgentSettings> = {};
  for (const name of names) {
    const set = file.agents[name] ?? {};
    const where = file.agents[name] ? `agents.${name}` : "";
    const own = Object.keys(set).some((key) => key !== "workspace" && key !== "model")
      ? checked(mergedFile(raw, set), configFile, `${where}.`)
      : file;
    const { openai, keys } = agentEndpoint(env, input.openai, set.model, `${where}.model`, required);
    const problem = own === file && !set.model ? undefined : fileProblem(own, openai.model);
    if (problem) throw new SettingProblem(`${where}: ${problem}`);
    const keyed = [...own.agent.models, ...own.agent.fallbackModels.filter((f) => typeof f !== "string")];
    const modelKeys = keysOf(env, keyed, `${where ? `${where}.` : ""}agent.models`, required);
    agents[name] = {
      agentName: name,
      workspace:
        name === MAIN_AGENT && !set.workspace ? input.workspace : agentWorkspace(home, dir, name, set.workspace),
      openai,
      keys: { ...keys, ...modelKeys },
      agent: own.agent,
      exec: own.exec,
      approvals: own.approvals,
      memory: own.memory,
      mcp: own.mcp,
      // A chat is its agent's: another agent has a heartbeat or writes to other chats only when its own settings say.
      heartbeat: name === MAIN_AGENT || set.heartbeat ? own.heartbeat : {},
      message: name === MAIN_AGENT || set.message ? own.message : { allowedTargets: [] },
    };
  }
  for (const agent of Object.values(agents)) {
    const others = Object.values(agents).flatMap((a) => (a === agent ? [] : Object.keys(a.keys)));
    const visible = Object.fromEntries(Object.entries(env).filter(([k]) => !others.includes(k) || k in agent.keys));
    agent.mcp = { servers: resolveMcpSettings(visible, agent.mcp.servers, dir) };
  }
  return agents;
}

/** The file (or an agent's merge of it, `prefix` naming the agent) checked and its defaults filled in. */
function checked(data: Record<string, unknown>, path: string, prefix = ""): FileConfig {
  const validate = fileValidator();
  if (!validate(data)) {
    const e = validate.errors?.[0];
    const at = e?.instancePath ? prefix + e.instancePath.slice(1).replaceAll("/", ".") : "the top level";
    // An unknown key or a bad name of a map's entry is named (ajv says only "must NOT have additional properties").
    const named = (e?.params as { additionalProperty?: string } | undefined)?.additionalProperty ?? e?.propertyName;
    const extra = named === undefined ? "" : ` "${named}"`;
    throw new ConfigError(`PINCER_CONFIG file ${path}: ${at} ${e?.message ?? "is invalid"}${extra}.`);
  }
  return data;
}

function readConfigFile(path: string, explicit: boolean): { file: FileConfig; raw: Record<string, unknown> } {
  let data: unknown = {};
  if (existsSync(path)) {
    try {
      data = JSON.parse(readFileSync(path, "utf8"));
    } catch (err) {
      throw new ConfigError(`PINCER_CONFIG file ${path} is not valid JSON: ${(err as Error).message}.`);
    }
  } else if (explicit) {
    throw new ConfigError(`PINCER_CONFIG points to ${path}, which does not exist.`);
  }
  // Cloned before the validator fills in the defaults (which throws for anything but an object).
  const raw = structuredClone(data) as Record<string, unknown>;
  return { file: checked(data as Record<string, unknown>, path), raw };
}

/** A setting's problem said as the file's: "PINCER_CONFIG file PATH: setting …". */
function inFile<T>(configFile: string, read: () => T): T {
  try {
    return read();
  } catch (err) {
    if (err instanceof SettingProblem) throw new ConfigError(`PINCER_CONFIG file ${configFile}: ${err.message}.`);
    throw err;
  }
}

function url(env: Env, name: string, fallback: string): string {
  const value = env[name]?.trim() || fallback;
  if (!isHttpUrl(value)) throw new ConfigError(`${name} must be an http(s) URL, not "${value}".`);
  return value.replace(/\/+$/, "");
}

/** Each bot token's shape (Telegram: the bot's id, a colon, the secret; Discord: three base64url parts) and where it is. */
const TOKENS = {
  telegram: [/^\d+:[A-Za-z0-9_-]{30,}$/, "the token BotFather gave you, like 123456789:AAH…"],
  discord: [
    /^[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{20,}$/,
    "the bot token from the Developer Portal (Bot → Reset Token)",
  ],
} as const;

function tokenShape(channel: keyof typeof TOKENS, name: string, value: string): void {
  const [shape, what] = TOKENS[channel];
  if (!shape.test(value)) throw new ConfigError(`${name} does not look like a bot token: paste ${what}.`);
}

/** Platforms identify users by number; a @name would silently let nobody in. */
function allowList(env: Env, name: string): string[] {
  const entries = (env[name] ?? "").split(",").flatMap((entry) => entry.trim() || []);
  const bad = entries.find((entry) => entry !== "*" && !/^\d+$/.test(entry));
  if (bad !== undefined) {
    throw new ConfigError(
      `${name} entry "${bad}" is not a numeric user id: list ids like 123456789 (or *); "pincer pairing list" shows the id of anyone who asked the bot for a code.`,
    );
  }
  return entries;
}

function expandHome(path: string): string {
  return path === "~" || path.startsWith("~/") ? join(homedir(), path.slice(1)) : path;
}

export function isValidTimeZone(zone: string): boolean {
  // A canonical name needs no formatter: building one loads ICU's locale data (~8 MB, ~12 ms), which can wait for
  // the first turn. Aliases (Asia/Calcutta, US/Eastern) are tried for real.
  if (zone === "UTC" || Intl.supportedValuesOf("timeZone").includes(zone)) return true;
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}
