import { bindingFor } from "../access/bindings.js";
import { createAccessGate } from "../access/gate.js";
import { isNamedOwner } from "../access/policy.js";
import { toChatMessage } from "../agent/context.js";
import { FORGET_PREFIX, forgetTaps } from "../agent/people-commands.js";
import { createApprovals } from "../approvals/approvals.js";
import { MESSAGE_BUTTON_PREFIX, messageButtonTaps, routeTaps } from "../bus/buttons.js";
import { Switchboard } from "../bus/switchboard.js";
import type { ClusterMode } from "../cluster/cluster-mode.js";
import { accountAgent, allowListsOf } from "../config/agents.js";
import type { Config } from "../config/config.js";
import { createTokenCounter } from "../llm/tokens.js";
import { storeLocation } from "../paths.js";
import { jobActions } from "../scheduler/job-actions.js";
import { createJobsChat, JOB_BUTTON_PREFIX } from "../scheduler/jobs-chat.js";
import { Scheduler } from "../scheduler/scheduler.js";
import { ensureHome } from "../setup/ensure-home.js";
import { openStore } from "../store/open.js";
import type { AppOptions } from "./options.js";

export type Core = Awaited<ReturnType<typeof buildCore>>;

/** What every process has before any model: the store, the bus and its gate, approvals, the scheduler, the jobs. */
export async function buildCore(config: Config, options: AppOptions) {
  const { log } = options;
  ensureHome(config, log);
  const tokens = createTokenCounter();
  const store = await openStore(storeLocation(config), {
    countTokens: (m) => tokens.rawMessage(toChatMessage(m)),
    onError: (err) => log.warn({ err: err.message }, "lost a connection to the database; it is opened again"),
    queryTimeoutMs: config.cluster.queryTimeoutSeconds * 1000,
  });
  // Clustered mode (PINCER_DATABASE_URL, on the PostgreSQL engine): its code is loaded only then.
  const clustering =
    config.databaseUrl && store.engine === "postgres" ? await import("../cluster/cluster-mode.js") : undefined;
  /** The cluster this process joined: set by the clustered lifecycle's start, read by what works with the others. */
  const cluster: { joined?: ClusterMode } = {};
  const allowFrom = allowListsOf(config);
  const access = createAccessGate({
    allowFrom,
    agentFor: (msg) => bindingFor(msg, config.bindings, accountAgent(config.accounts, msg)),
    pairing: store.pairing,
    people: store.people,
    roles: config,
    log: log.child({ part: "access" }),
  });
  const bus = new Switchboard({
    // Clustered: accepted messages wait in the shared inbox for whichever process takes their conversation.
    elsewhere: clustering && (() => cluster.joined?.accepted()),
    journal: store.journal,
    retry: {
      baseDelayMs: config.delivery.retryMinSeconds * 1000,
      maxDelayMs: config.delivery.retryMaxSeconds * 1000,
      deadLetterAfterMs: config.delivery.deadLetterAfterHours * 3600_000,
    },
    log: log.child({ part: "outbox" }),
    gate: (msg, send) => access.admit(msg, send),
  });
  const approvals = createApprovals(config, { store, bus, log, now: options.now });
  const scheduler = new Scheduler({
    store: store.jobs,
    bus,
    inbox: store.journal,
    log: log.child({ part: "scheduler" }),
    ownerHasAccess: (owner) => access.hasAccess(owner.channel, owner.userId),
    // A job changed by another process (the CLI, a cluster's member) is seen within a second clustered, 10 s alone.
    maxSleepMs: clustering ? 1000 : 10_000,
    runs: store.jobRuns,
    defaults: config.cron,
  });
  const jobs = jobActions({
    jobs: store.jobs,
    minEverySeconds: config.cron.minEverySeconds,
    wake: () => scheduler.wake(),
  });
  const jobsChat = createJobsChat({
    store,
    bus,
    actions: jobs,
    isPincerOwner: (route, userId) => isNamedOwner(route, userId, allowFrom),
    log: log.child({ part: "jobs" }),
  });
  bus.onTap(
    routeTaps({
      "a:": approvals?.tap,
      [MESSAGE_BUTTON_PREFIX]: messageButtonTaps(bus),
      [JOB_BUTTON_PREFIX]: jobsChat.tap,
      [FORGET_PREFIX]: forgetTaps({ store, config, bus }),
    }),
  );
  return { log, tokens, store, clustering, cluster, access, bus, approvals, scheduler, jobs, jobsChat };
}
