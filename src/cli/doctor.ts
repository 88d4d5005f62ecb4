import { existsSync } from "node:fs";
import { listSkills } from "../agent/skills.js";
import { type Config, isValidTimeZone } from "../config/config.js";
import { databaseHost } from "../config/database-url.js";
import { databasePath, skillDirs, storeLocation } from "../paths.js";
import { withStore } from "../store/open.js";
import { checkSandbox, describeLimits } from "../tools/exec/sandbox-check.js";
import { checkMcpServers } from "../tools/mcp/check.js";
import { voiceCheck } from "../voice/problems.js";
import { databaseErrorText } from "./database-problem.js";
import { folderProblem } from "./fs-problem.js";
import { probeModelTurn } from "./model-turn.js";
import { type Check, check, probeAgentModels, probeBot, probeModel } from "./probes.js";
import { clusterReport } from "./status.js";

/** `pincer doctor`: each thing pincer needs, checked for real with the configured keys, and what to do, a line each;
 * not ok when one failed (exit code 1). */
export async function doctorText(config: Config): Promise<{ ok: boolean; text: string }> {
  const node = process.versions.node;
  const modern = Number(node.split(".")[0]) >= 20;
  const folders = [writable("PINCER_HOME", config.home), writable("PINCER_WORKSPACE", config.workspace)];
  const database = await databaseCheck(config);
  const cluster = config.databaseUrl ? await clusterReport(config, config.databaseUrl) : undefined;
  const [model, models, telegram, discord, sandbox, mcp] = await Promise.all([
    // Only an endpoint that answers is sent a turn's request.
    probeModel(config).then(async (listed) =>
      listed.status === "fail" ? [listed] : [listed, await probeModelTurn(config)],
    ),
    probeAgentModels(config),
    probeBot(config, "telegram"),
    probeBot(config, "discord"),
    checkSandbox(config),
    checkMcpServers(config),
  ]);
  const zone = `${config.timezone} (schedules use it; set PINCER_TIMEZONE to change it)`;
  const checks: Check[] = [
    check("node", modern ? "ok" : "fail", modern ? `v${node}` : `v${node}; pincer needs Node 20 or newer`),
    ...folders,
    database,
    // Clustered mode: every role held by a live process (a warning otherwise: the cluster may be starting).
    ...(cluster ? [check("cluster", cluster.ok ? "ok" : "warn", cluster.detail)] : []),
    check("timezone", isValidTimeZone(config.timezone) ? "ok" : "fail", zone),
    ...model,
    ...models,
    check("sandbox", !sandbox.ok ? "fail" : sandbox.sandboxed ? "ok" : "warn", sandbox.detail),
    ...(sandbox.ok ? [{ name: "sandbox limits", ...describeLimits(sandbox, config.exec) }] : []),
    telegram,
    discord,
    ...mcp.map((server) => check("mcp", !server.ok ? "fail" : server.warned ? "warn" : "ok", server.detail)),
    skillsCheck(config),
    ...[voiceCheck(config.voice)].flatMap((voice) => (voice ? [{ name: "voice", ...voice }] : [])),
  ];
  const mark = { ok: "ok  ", warn: "warn", fail: "FAIL" };
  const text = checks.map((c) => `[${mark[c.status]}] ${c.name}: ${c.detail}`).join("\n");
  return { ok: !checks.some((c) => c.status === "fail"), text };
}

/** Skills whose requirements are missing are left out of the prompt: say which and why. */
function skillsCheck(config: Config): Check {
  const skills = listSkills(skillDirs(config.workspace));
  const unmet = skills.filter((s) => s.missing.length > 0);
  if (unmet.length === 0) return check("skills", "ok", `${skills.length} available`);
  const left = unmet.map((s) => `${s.name} (${s.missing.join(", ")})`).join("; ");
  return check("skills", "warn", `${skills.length - unmet.length} of ${skills.length} available; left out: ${left}`);
}

/** folderProblem checks the path itself once it exists: a folder this user can write. */
function writable(name: string, path: string): Check {
  const problem = folderProblem(path);
  if (problem) return check(name, "fail", `${problem}: set ${name} to a folder this user can write`);
  if (!existsSync(path)) return check(name, "warn", `${path} does not exist yet; \`pincer onboard\` creates it`);
  return check(name, "ok", path);
}

async function databaseCheck(config: Config): Promise<Check> {
  if (!config.databaseUrl && !existsSync(config.home)) return check("database", "warn", "not created yet");
  // Never the URL itself: it carries the password.
  const where = config.databaseUrl ? `PostgreSQL at ${databaseHost(config.databaseUrl)}` : databasePath(config.home);
  return withStore(storeLocation(config), async () => {}).then(
    () => check("database", "ok", where),
    (err: unknown) => check("database", "fail", `cannot open ${where}: ${databaseErrorText(err)}`),
  );
}
