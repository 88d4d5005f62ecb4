import { accessSync, constants, existsSync } from "node:fs";
import OpenAI from "openai";
import type { Config } from "../config/config.js";
import { databasePath } from "../paths.js";
import { openDatabase } from "../store/database.js";
import { checkSandbox } from "../tools/exec/sandbox-check.js";

export interface Check {
  name: string;
  status: "ok" | "warn" | "fail";
  detail: string;
}

/** `pincer doctor`: each thing pincer needs, checked for real, with what to do when it is missing. */
export async function runDoctor(config: Config): Promise<Check[]> {
  const checks: Check[] = [];
  const major = Number(process.versions.node.split(".")[0]);
  checks.push({
    name: "node",
    status: major >= 20 ? "ok" : "fail",
    detail: major >= 20 ? `v${process.versions.node}` : `v${process.versions.node}; pincer needs Node 20 or newer`,
  });
  checks.push(writable("PINCER_HOME", config.home));
  checks.push(writable("PINCER_WORKSPACE", config.workspace));
  checks.push(databaseCheck(config));
  checks.push(await modelCheck(config));
  const sandbox = await checkSandbox(config);
  checks.push({
    name: "sandbox",
    status: !sandbox.ok ? "fail" : sandbox.sandboxed ? "ok" : "warn",
    detail: sandbox.detail,
  });
  checks.push({
    name: "telegram",
    status: config.telegramToken ? "ok" : "warn",
    detail: config.telegramToken ? `on, API ${config.telegramApiRoot}` : "off: set TELEGRAM_BOT_TOKEN to enable it",
  });
  checks.push({
    name: "discord",
    status: config.discordToken ? "ok" : "warn",
    detail: config.discordToken ? `on, API ${config.discordApiUrl}` : "off: set DISCORD_BOT_TOKEN to enable it",
  });
  return checks;
}

export function formatChecks(checks: Check[]): string {
  const mark = { ok: "ok  ", warn: "warn", fail: "FAIL" };
  return checks.map((c) => `[${mark[c.status]}] ${c.name}: ${c.detail}`).join("\n");
}

function writable(name: string, path: string): Check {
  if (!existsSync(path))
    return { name, status: "warn", detail: `${path} does not exist yet; \`pincer onboard\` creates it` };
  try {
    accessSync(path, constants.W_OK);
    return { name, status: "ok", detail: path };
  } catch {
    return { name, status: "fail", detail: `${path} is not writable by this user` };
  }
}

function databaseCheck(config: Config): Check {
  if (!existsSync(config.home)) return { name: "database", status: "warn", detail: "not created yet" };
  try {
    openDatabase(databasePath(config.home)).close();
    return { name: "database", status: "ok", detail: databasePath(config.home) };
  } catch (err) {
    return {
      name: "database",
      status: "fail",
      detail: `cannot open ${databasePath(config.home)}: ${(err as Error).message}`,
    };
  }
}

async function modelCheck(config: Config): Promise<Check> {
  if (!config.openai.apiKey) return { name: "model", status: "fail", detail: "OPENAI_API_KEY is not set" };
  const client = new OpenAI({
    apiKey: config.openai.apiKey,
    baseURL: config.openai.baseUrl,
    timeout: 10_000,
    maxRetries: 0,
  });
  try {
    await client.models.list();
    return { name: "model", status: "ok", detail: `${config.openai.model} at ${config.openai.baseUrl} answers` };
  } catch (err) {
    const status = (err as { status?: number }).status;
    const detail =
      status === 401
        ? "the endpoint refused OPENAI_API_KEY (401)"
        : `${config.openai.baseUrl} did not answer /models: ${(err as Error).message}`;
    return { name: "model", status: status === 404 ? "warn" : "fail", detail };
  }
}
