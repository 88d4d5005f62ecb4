import { accessSync, constants, existsSync } from "node:fs";
import { listSkills } from "../agent/skills.js";
import { type Config, isValidTimeZone } from "../config/config.js";
import { databaseHost } from "../config/database-url.js";
import { databasePath, skillDirs, storeLocation } from "../paths.js";
import { withStore } from "../store/open.js";
import { checkSandbox, describeLimits } from "../tools/exec/sandbox-check.js";
import { checkMcpServers } from "../tools/mcp/check.js";
import { databaseErrorText } from "./database-problem.js";
import { folderProblem } from "./fs-problem.js";
import { probeModelTurn } from "./model-turn.js";
import { type Check, probeDiscord, probeModel, probeTelegram } from "./probes.js";

export type { Check } from "./probes.js";

/** `pincer doctor`: each thing pincer needs, checked for real with the configured keys, and what to do. */
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
  checks.push(await databaseCheck(config));
  if (config.databaseUrl) checks.push(await clusterCheck(config, config.databaseUrl));
  checks.push({
    name: "timezone",
    status: isValidTimeZone(config.timezone) ? "ok" : "fail",
    detail: `${config.timezone} (schedules use it; set PINCER_TIMEZONE to change it)`,
  });
  const [model, telegram, discord, sandbox, mcp] = await Promise.all([
    // Only an endpoint that answers is sent a turn's request.
    probeModel(config).then(async (listed) =>
      listed.status === "fail" ? [listed] : [listed, await probeModelTurn(config)],
    ),
    probeTelegram(config),
    probeDiscord(config),
    checkSandbox(config),
    checkMcpServers(config),
  ]);
  checks.push(...model);
  checks.push({
    name: "sandbox",
    status: !sandbox.ok ? "fail" : sandbox.sandboxed ? "ok" : "warn",
    detail: sandbox.detail,
  });
  if (sandbox.ok) checks.push({ name: "sandbox limits", ...describeLimits(sandbox, config.exec) });
  checks.push(telegram, discord);
  for (const server of mcp) {
    checks.push({ name: "mcp", status: !server.ok ? "fail" : server.warned ? "warn" : "ok", detail: server.detail });
  }
  checks.push(skillsCheck(config));
  return checks;
}

/** Skills whose requirements are missing are left out of the prompt: say which and why. */
export function skillsCheck(config: Config): Check {
  const skills = listSkills(skillDirs(config.workspace));
  const unmet = skills.filter((s) => s.missing.length > 0);
  if (unmet.length === 0) return { name: "skills", status: "ok", detail: `${skills.length} available` };
  return {
    name: "skills",
    status: "warn",
    detail: `${skills.length - unmet.length} of ${skills.length} available; left out: ${unmet.map((s) => `${s.name} (${s.missing.join(", ")})`).join("; ")}`,
  };
}

export function formatChecks(checks: Check[]): string {
  const mark = { ok: "ok  ", warn: "warn", fail: "FAIL" };
  return checks.map((c) => `[${mark[c.status]}] ${c.name}: ${c.detail}`).join("\n");
}

function writable(name: string, path: string): Check {
  const problem = folderProblem(path);
  if (problem) return { name, status: "fail", detail: `${problem}: set ${name} to a folder this user can write` };
  if (!existsSync(path))
    return { name, status: "warn", detail: `${path} does not exist yet; \`pincer onboard\` creates it` };
  try {
    accessSync(path, constants.W_OK);
    return { name, status: "ok", detail: path };
  } catch {
    return { name, status: "fail", detail: `${path} is not writable by this user` };
  }
}

async function databaseCheck(config: Config): Promise<Check> {
  if (!config.databaseUrl && !existsSync(config.home))
    return { name: "database", status: "warn", detail: "not created yet" };
  // Never the URL itself: it carries the password.
  const where = config.databaseUrl ? `PostgreSQL at ${databaseHost(config.databaseUrl)}` : databasePath(config.home);
  try {
    await withStore(storeLocation(config), async () => {});
    return { name: "database", status: "ok", detail: where };
  } catch (err) {
    return { name: "database", status: "fail", detail: `cannot open ${where}: ${databaseErrorText(err)}` };
  }
}

/** Clustered mode: every role held by a live process (a warning otherwise: the cluster may be starting). */
async function clusterCheck(config: Config, url: string): Promise<Check> {
  const { configuredChannels, inspectCluster } = await import("../cluster/inspect.js");
  const report = await inspectCluster(url, configuredChannels(config));
  return { name: "cluster", status: report.ok ? "ok" : "warn", detail: report.detail };
}
