#!/usr/bin/env node
import { existsSync } from "node:fs";
import { Command } from "commander";
import { type Config, ConfigError, type LoadOptions, loadConfig } from "../config/config.js";
import { createLogger, createTerminalLogger } from "../log.js";
import { storeLocation } from "../paths.js";
import { jobCommand, listJobsText, showJobText } from "../scheduler/cron-commands.js";
import { LIMIT_NAMES, type LimitInput } from "../scheduler/stop-rules.js";
import { withStore } from "../store/open.js";
import type { Store } from "../store/store.js";
import { LIMIT_FIELDS } from "../store/types.js";
import { describeDatabaseProblem } from "./database-problem.js";
import { describeFsProblem } from "./fs-problem.js";
import { pairingApprove, pairingList, pairingRevoke } from "./pairing.js";
import { peopleList, peopleRemove, peopleRole, peopleShow } from "./people.js";

// Each command's module (but the small store-only ones) is imported by its action once the configuration is read, so
// `pincer gateway` starts without the others' and a configuration mistake is told before anything big loads.

/** Reads `.env` from the working directory (variables already set win: systemd's Environment= and a shell's export
 * override the file) and the configuration; a problem with it is a ConfigError, said below in its sentence. */
function loadFromEnv(options: LoadOptions = {}, terminal = false, agent = "main") {
  if (existsSync(".env")) process.loadEnvFile(".env");
  const config = loadConfig(process.env, options);
  if (!Object.hasOwn(config.agents, agent)) {
    throw new ConfigError(`--agent "${agent}" is not an agent (agents: ${Object.keys(config.agents).join(", ")}).`);
  }
  // Keys and tokens now live in their agent's or account's settings only: no other agent's tool or child reads them.
  for (const name of config.secrets) delete process.env[name];
  return { config, log: terminal ? createTerminalLogger(config.logLevel, config.home) : createLogger(config.logLevel) };
}

/** A command that needs only the configuration: prints its answer; a failed one sets exit code 1. */
function answer<A extends unknown[]>(
  run: (config: Config, ...args: A) => Promise<string | { ok: boolean; text: string }>,
) {
  return async (...args: A) => {
    const { config } = loadFromEnv({ requireApiKey: false });
    const result = await run(config, ...args);
    console.log(typeof result === "string" ? result : result.text);
    if (typeof result !== "string" && !result.ok) process.exitCode = 1;
  };
}

const program = new Command("pincer")
  .description(
    "A small, self-hosted chat-bot daemon: Telegram and Discord, an OpenAI-compatible model, sandboxed tools.",
  )
  .showHelpAfterError()
  .addHelpText(
    "after",
    "\nExit codes: 0 done; 1 a configuration or usage mistake (one sentence on stderr), a failed doctor check,\n" +
      "or nothing matched (cron remove, pairing approve); 3 agent -m could not answer (the model failed).",
  );

program
  .command("gateway")
  .description("run the daemon: every configured channel, the agent, the scheduler")
  .action(async () => {
    const { config, log } = loadFromEnv();
    await (await import("./gateway.js")).runGateway(config, log);
  });

program
  .command("chat")
  .description("talk to the agent in the terminal")
  .option("-s, --session <id>", "terminal conversation to continue", "local")
  .option("--agent <name>", "the agent to talk to (config agents)", "main")
  .action(async ({ session, agent }: { session: string; agent: string }) => {
    const { config, log } = loadFromEnv({}, true, agent);
    await (await import("./terminal.js")).runChat(config, log, { chatId: session, agent });
  });

program
  .command("agent")
  .description("run one turn and print the reply")
  .requiredOption("-m, --message <text>", "what to say to the agent")
  .option("-s, --session <id>", "terminal conversation to continue", "local")
  .option("--agent <name>", "the agent to talk to (config agents)", "main")
  .action(async ({ message, session, agent }: { message: string; session: string; agent: string }) => {
    const { config, log } = loadFromEnv({}, true, agent);
    const chat = { chatId: session, agent };
    if (!(await (await import("./terminal.js")).runAgentOnce(config, log, message, chat))) process.exitCode = 3;
  });

program
  .command("onboard")
  .description("create PINCER_HOME, the workspace and .env (overwrites nothing)")
  .action(answer(async (config) => (await import("./onboard.js")).runOnboard(config).join("\n")));

program
  .command("doctor")
  .description("check the configuration, the model endpoint, the sandbox and the channels")
  .action(answer(async (config) => (await import("./doctor.js")).doctorText(config)));

program
  .command("status")
  .description("show what is stored and waiting")
  .action(answer(async (config) => (await import("./status.js")).statusText(config)));

program
  .command("usage")
  .description("model tokens and cost today and this month, by kind of run, model and chat")
  .option("--json", "print it as JSON")
  .action(
    answer(async (config, { json }: { json?: boolean }) => (await import("./usage.js")).usageText(config, !!json)),
  );

program
  .command("dashboard")
  .description("print the control page's address with its token")
  .action(answer(async (config) => (await import("./dashboard.js")).dashboardText(config)));

const cron = program.command("cron").description("reminders and scheduled jobs of every conversation");
const onJobs = <A extends unknown[]>(
  run: (store: Store, ...args: A) => Promise<string | { ok: boolean; text: string }>,
) => answer((config, ...args: A) => withStore(storeLocation(config), (store) => run(store, ...args)));
cron
  .command("list")
  .description("every job with its conversation and next run")
  .option("--json", "print it as JSON")
  .action(onJobs((store, { json }: { json?: boolean }) => listJobsText(store.jobs, !!json)));
cron
  .command("show <id>")
  .description("one job: its schedule, next runs, stop rules and newest runs")
  .option("--json", "print it as JSON")
  .action(onJobs((store, id: string, { json }: { json?: boolean }) => showJobText(store, id, !!json)));
for (const [action, description] of [
  ["pause", "pause a job until it is resumed"],
  ["resume", "resume a paused job at its next slot"],
  ["run", "run a job once now (the running daemon fires it within seconds)"],
  ["remove", "remove a job (the running daemon notices within seconds)"],
] as const) {
  cron
    .command(`${action} <id>`)
    .description(description)
    .action(onJobs((store, id: string) => jobCommand(store, action, id)));
}
const limit = cron
  .command("limit <id>")
  .description(
    "set a job's own stop rules: --ends-at in its zone (2026-12-31T18:00); none removes one (cron defaults apply)",
  );
for (const rule of LIMIT_FIELDS)
  limit.option(`--${rule.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)} <value>`, LIMIT_NAMES[rule]);
limit.action(onJobs((store, id: string, rules: LimitInput) => jobCommand(store, "limit", id, rules)));

const pairing = program.command("pairing").description("approve strangers who asked for access");
pairing.command("list").description("pending codes and approved users").action(answer(pairingList));
pairing
  .command("approve <channel> <code>")
  .description("approve the user behind a pairing code (channel: telegram or discord)")
  .action(answer(pairingApprove));
pairing
  .command("revoke <channel> <user>")
  .description("take back a user's access (channel: telegram or discord; user: their id) and pause their jobs")
  .action(answer(pairingRevoke));

const people = program.command("people").description("the people who write to pincer, their roles and accounts");
people
  .command("list")
  .description("everyone who wrote, with role and accounts")
  .option("--json", "print it as JSON")
  .action(answer(peopleList));
people
  .command("show <id>")
  .description("a person's role, accounts and what is stored")
  .option("--json", "print it as JSON")
  .action(answer(peopleShow));
people
  .command("role <id> <role>")
  .description("set a person's role (or `default`)")
  .action(answer((c, id: string, role: string) => peopleRole(c, id, role)));
people
  .command("remove <id>")
  .description("forget a person and revoke their approvals")
  .action(answer((c, id: string) => peopleRemove(c, id)));

try {
  await program.parseAsync();
} catch (err) {
  // Settings checked after start-up and an unwritable PINCER_HOME fail like the environment's: one sentence.
  const sentence =
    err instanceof ConfigError
      ? err.message
      : (describeFsProblem(err) ?? describeDatabaseProblem(err, process.env.PINCER_DATABASE_URL?.trim()));
  if (sentence === undefined) throw err;
  process.stderr.write(`pincer: ${sentence}\n`);
  process.exit(1);
}
