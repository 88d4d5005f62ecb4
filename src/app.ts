import type { Logger } from "pino";
import { bindingFor } from "./access/bindings.js";
import { createAccessGate } from "./access/gate.js";
import { isNamedOwner } from "./access/policy.js";
import { resumePending } from "./access/resume.js";
import { prepareAttachments } from "./agent/attachments.js";
import { toChatMessage } from "./agent/context.js";
import { HelperManager } from "./agent/helpers.js";
import { createChatModels } from "./agent/model-choice.js";
import { listSkills } from "./agent/skills.js";
import { AgentWorker } from "./agent/worker.js";
import { createApprovals } from "./approvals/approvals.js";
import { MessageBus } from "./bus/bus.js";
import { MESSAGE_BUTTON_PREFIX, messageButtonTaps, routeTaps } from "./bus/buttons.js";
import type { Channel } from "./bus/channel.js";
import { routeOf } from "./bus/types.js";
import type { ClusterMode, RoleHolders } from "./cluster/cluster-mode.js";
import { accountAgent, allowListsOf } from "./config/agents.js";
import type { Config } from "./config/config.js";
import { createConfiguredModels, createHelperModel, discoverContexts } from "./llm/configured.js";
import { ContextLimits, contextLine } from "./llm/context-limits.js";
import type { Model } from "./llm/model.js";
import { createTokenCounter } from "./llm/tokens.js";
import { createTranscriber, type Heard } from "./llm/transcribe.js";
import { Consolidator } from "./memory/consolidator.js";
import { contextLimitsPath, mediaDir, skillDirs, storeLocation } from "./paths.js";
import { Heartbeat, readHeartbeatFile } from "./scheduler/heartbeat.js";
import { jobActions } from "./scheduler/job-actions.js";
import { createJobsChat, JOB_BUTTON_PREFIX } from "./scheduler/jobs-chat.js";
import { recordingRunEnds } from "./scheduler/run-end.js";
import { guardedForRun } from "./scheduler/run-guard.js";
import { Scheduler } from "./scheduler/scheduler.js";
import { ensureHome } from "./setup/ensure-home.js";
import { startHousekeeping } from "./store/housekeeping.js";
import { openStore } from "./store/open.js";
import { ReadCache, type ReadCacheOptions } from "./tools/files/read-cache.js";
import { createTools } from "./tools/index.js";
import { DEFAULT_TIMING, type Timing } from "./tools/mcp/connection.js";
import { McpManager, mcpStatusLines } from "./tools/mcp/manager.js";
import { ToolRegistry } from "./tools/registry.js";
import { UsageMeter } from "./usage/meter.js";
import { transcriptionProblem } from "./voice/problems.js";
import { createCommandTranscriber } from "./voice/transcribe-command.js";
import { VoiceReplies } from "./voice/voice-replies.js";
import { createMetrics } from "./web/metrics.js";

export interface AppOptions {
  log: Logger;
  /** Instead of the configured endpoint (benchmarks). */
  model?: Model;
  now?: () => Date;
  mcpTiming?: Partial<Timing>;
  /** Only the daemon writes one, for `pincer status`. */
  mcpStatusFile?: string;
  /** False for one-shot commands: a message fails instead of waiting for the model to come back. */
  waitForModel?: boolean;
  readCache?: ReadCacheOptions;
  /** The most the first turns wait for the MCP servers' first attempts (default: their connect timeout). */
  mcpWaitMs?: number;
}

/** Everything one pincer process shares, wired once: the composition root of the daemon. */
export type App = Awaited<ReturnType<typeof createApp>>;

export async function createApp(config: Config, options: AppOptions) {
  const { log } = options;
  ensureHome(config, log);
  const tokens = createTokenCounter();
  const store = await openStore(storeLocation(config), {
    countTokens: (m) => tokens.rawMessage(toChatMessage(m)),
    onError: (err) => log.warn({ err: err.message }, "lost a connection to the database; it is opened again"),
    queryTimeoutMs: config.cluster.queryTimeoutSeconds * 1000,
  });
  const { journal } = store;
  // Clustered mode (PINCER_DATABASE_URL, on the PostgreSQL engine): its code is loaded only then.
  const clustering =
    config.databaseUrl && store.engine === "postgres" ? await import("./cluster/cluster-mode.js") : undefined;
  let cluster: ClusterMode | undefined;
  const bus = new MessageBus({
    // Clustered: accepted messages wait in the shared inbox for whichever process takes their conversation.
    elsewhere: clustering && (() => cluster?.accepted()),
    journal,
    retry: {
      baseDelayMs: config.delivery.retryMinSeconds * 1000,
      maxDelayMs: config.delivery.retryMaxSeconds * 1000,
      deadLetterAfterMs: config.delivery.deadLetterAfterHours * 3600_000,
    },
    log: log.child({ part: "outbox" }),
    gate: (msg) => access.admit(msg),
  });
  const access = createAccessGate({
    allowFrom: allowListsOf(config),
    agentFor: (msg) => bindingFor(msg, config.bindings, accountAgent(config.accounts, msg)),
    pairing: store.pairing,
    send: (msg) => bus.publishOutbound(msg),
    log: log.child({ part: "access" }),
  });
  const registry = new ToolRegistry(config.agent.toolTimeoutSeconds, config.agent.maxToolResultChars);
  const approvals = createApprovals(config, { store, bus, log, now: options.now });
  const scheduler = new Scheduler({
    store: store.jobs,
    bus,
    inbox: journal,
    log: log.child({ part: "scheduler" }),
    ownerHasAccess: (owner) => access.hasAccess(owner.channel, owner.userId),
    // Clustered: a job added (or paused, or asked to run) on another process is seen within a second.
    // Alone, every 10 s: `pincer cron run` from another process is obeyed soon.
    maxSleepMs: clustering ? 1000 : 10_000,
    runs: store.jobRuns,
    defaults: config.cron,
  });
  // What the page, /jobs' buttons and the CLI do to jobs: writes the scheduler's holder obeys, wherever it runs.
  const jobs = jobActions({
    jobs: store.jobs,
    minEverySeconds: config.cron.minEverySeconds,
    wake: () => scheduler.wake(),
  });
  const jobsChat = createJobsChat({
    store,
    bus,
    actions: jobs,
    isPincerOwner: (route, userId) => isNamedOwner(route, userId, allowListsOf(config)),
    log: log.child({ part: "jobs" }),
  });
  bus.onTap(
    routeTaps({
      "a:": approvals?.tap,
      [MESSAGE_BUTTON_PREFIX]: messageButtonTaps(bus),
      [JOB_BUTTON_PREFIX]: jobsChat.tap,
    }),
  );
  // What each endpoint's context is, learned from the servers and remembered across restarts.
  const limits = new ContextLimits(contextLimitsPath(config.home), log.child({ part: "model" }));
  // The main model (or a chat's choice of agent.models) and agent.fallbackModels, each behind a circuit breaker.
  const { model, chain } = createConfiguredModels(config, log.child({ part: "model" }), options.model, limits);
  const { window } = chain(undefined);
  const usage = new UsageMeter({ config, store: store.usage, tokens, log, now: options.now });
  // A scheduled run's calls stop at its job's caps (per run, per day) before the budgets are asked.
  const guard = { store, defaults: config.cron };
  const turnUsage: Pick<UsageMeter, "wrap" | "report" | "checkBefore"> = {
    wrap: (model, run) => usage.wrap(guardedForRun(model, run, guard), run),
    report: (...args) => usage.report(...args),
    checkBefore: (run) => usage.checkBefore(run),
  };
  const helpers = new HelperManager({
    bus,
    store: store.helperRuns,
    model: createHelperModel(config, model, options.model !== undefined),
    registry,
    audit: store.audit,
    log: log.child({ part: "helpers" }),
    presence: clustering && {
      started: (id, onLost) => cluster?.helperStarted(id, onLost),
      ended: (id) => cluster?.helperEnded(id),
    },
    tokens,
    window,
    approve: approvals?.forHelpers,
    usage,
    config,
  });
  // voice.stt, when set, hears voice notes on this machine instead of the endpoint: the audio never leaves.
  const { stt } = config.voice;
  const transcribe: (path: string, signal?: AbortSignal, onHeard?: (heard: Heard) => void) => Promise<string> = stt
    ? createCommandTranscriber({
        command: stt.command,
        timeoutSeconds: config.voice.timeoutSeconds,
        maxSeconds: config.media.maxAudioSeconds,
      })
    : createTranscriber({
        ...config.openai,
        model: config.agent.transcriptionModel,
        timeoutSeconds: config.agent.modelTimeoutSeconds,
      });
  const voice = new VoiceReplies({
    settings: config.voice,
    openai: config.openai,
    mediaDir: mediaDir(config.home),
    modes: store.chatVoice,
    log: log.child({ part: "voice" }),
  });
  if (voice.inUse && voice.problem) log.warn(`Voice: ${voice.problem}`);
  const unheard = transcriptionProblem(config.voice);
  if (unheard) log.warn(`Voice: ${unheard}`);
  for (const tool of createTools({ config, store, scheduler, helpers })) {
    if (!config.agent.disabledTools.includes(tool.name)) registry.register(tool);
  }
  const mcp = new McpManager({
    servers: config.mcp.servers,
    disabledTools: new Set(config.agent.disabledTools),
    registry,
    log,
    maxResultChars: config.exec.maxOutputChars,
    statusFile: options.mcpStatusFile,
    timing: options.mcpTiming,
  });
  const skills = skillDirs(config.workspace);
  // The prompt's files and skills are read every turn; unchanged ones come from memory.
  const files = new ReadCache(options.readCache);
  const metrics = config.webAddr
    ? createMetrics({
        queueDepth: () => worker.load.queued,
        outboxPending: () => store.dashboard.outboxPending(),
        knownTool: (name) => registry.get(name) !== undefined,
      })
    : undefined;
  const consolidator = new Consolidator({
    store: store.memory,
    model,
    tokens,
    log: log.child({ part: "memory" }),
    workspace: config.workspace,
    timezone: config.timezone,
    contextTokens: window,
    now: options.now,
    usage,
  });
  const ownWrites = { journal, steps: store.steps, turns: store.turns };
  // Clustered: every journal write of a turn is made under its conversation's turn lease.
  const writes =
    clustering && store.fenced
      ? clustering.fenceTurnWrites(ownWrites, (key) => cluster?.fence(key), store.fenced.bind(store))
      : ownWrites;
  const worker: AgentWorker = new AgentWorker({
    bus,
    journal: writes.journal,
    conversations: store.conversations,
    // A scheduled run's end goes into its job's history.
    turns: recordingRunEnds(writes.turns, {
      store,
      bus,
      pauseAfterFailures: config.cron.pauseAfterFailures,
      log: log.child({ part: "scheduler" }),
    }),
    senderHasAccess: (msg) => access.hasAccess(routeOf(msg), msg.senderId),
    steps: writes.steps,
    onTurnFinished: clustering && ((msg) => cluster?.finished(msg)),
    audit: store.audit,
    registry,
    log,
    chatModels: createChatModels({ config, store: store.chatModels, access, chain }),
    helpers,
    memory: store.memory,
    tokens,
    consolidator: config.memory.consolidate ? consolidator : undefined,
    config,
    // A skill whose programs or variables are missing would only mislead the model.
    skills: () => listSkills(skills, log, process.env, files).filter((skill) => skill.missing.length === 0),
    files,
    waitForModel: options.waitForModel ?? true,
    // A transcription at the endpoint is counted with the chat's model calls (a local voice.stt costs nothing).
    attachments: (paths, signal, run) =>
      prepareAttachments(paths, {
        vision: config.agent.vision,
        transcribe: (path, s) => transcribe(path, s, (heard) => void usage.transcribed(run, heard)),
        signal,
      }),
    now: options.now,
    approve: approvals?.forTurns,
    ready: () => ready,
    statusLines: () => [contextLine(window(), config.agent.contextTokens), ...mcpStatusLines(mcp.status())],
    observer: metrics?.observer,
    usage: turnUsage,
    voice,
    jobsChat,
  });
  const { intervalMinutes, target } = config.heartbeat;
  const heartbeat =
    intervalMinutes && target
      ? new Heartbeat({
          bus,
          inbox: journal,
          target,
          intervalMs: intervalMinutes * 60_000,
          log: log.child({ part: "heartbeat" }),
          readFile: () => readHeartbeatFile(config.workspace, log),
        })
      : undefined;
  // Set by start(): the first turns wait for it (bounded) so they see the MCP tools and the real context.
  let ready: Promise<void> = Promise.resolve();
  const running: Channel[] = [];
  let workerDone: Promise<void> = Promise.resolve();
  let stopHousekeeping: (() => void) | undefined;
  // What one process of a cluster runs for all (a single process runs them itself).
  const singletons = {
    start: (channels: Channel[]) => {
      scheduler.start(channels.map((c) => c.name));
      heartbeat?.start();
      stopHousekeeping = startHousekeeping({
        store,
        mediaDir: mediaDir(config.home),
        retention: config.retention,
        log,
      });
    },
    stop: () => {
      stopHousekeeping?.();
      scheduler.stop();
      heartbeat?.stop();
    },
  };
  // Another process's reply wakes this one's sender at once (PostgreSQL; a single process wakes itself); clustered,
  // a new message wakes the dispatcher.
  const watch = () =>
    store.watch?.((change) => {
      if (change.kind === "outbox") bus.wakeSenders();
      else cluster?.wake();
    });
  let stopWatching: (() => Promise<void>) | undefined;
  let stopping: Promise<void> | undefined;
  let outboxPoll: NodeJS.Timeout | undefined;
  return {
    config,
    log,
    store,
    bus,
    registry,
    worker,
    helpers,
    scheduler,
    /** Run now, pause, resume, edit and delete, for the page and the chat. */
    jobs,
    mcp,
    /** Present when config `approvals` asks for any: the control page decides through it. */
    approvals,
    heartbeat,
    /** Present when the control page is on (PINCER_WEB_ADDR), which serves /metrics. */
    metrics,
    consolidator,
    files,
    /** Clustered mode: the cluster's state as status lines. */
    clusterLines: clustering && (async () => (cluster ? cluster.lines() : ["cluster: joining"])),
    /** Clustered mode: which roles run here and who holds each (nothing runs here before start()). */
    clusterRoles:
      clustering && (async (): Promise<RoleHolders> => cluster?.roleHolders() ?? { here: [], holders: new Map() }),
    /** Re-queues unfinished messages, then starts the channels: a message from before a restart runs first. */
    async start(channels: Channel[]): Promise<void> {
      // In the background: a slow or broken server never delays the channels, only the first turns.
      mcp.start();
      ready = Promise.all([
        mcp.firstAttempts(options.mcpWaitMs ?? { ...DEFAULT_TIMING, ...options.mcpTiming }.connectTimeoutMs),
        discoverContexts(config, limits),
      ]).then(() => undefined);
      if (clustering && config.databaseUrl) {
        // Clustered: the roles decide what runs here; the shared inbox, which conversations.
        workerDone = worker.run();
        cluster = await clustering.joinCluster(config.databaseUrl, {
          log,
          leaseMs: config.cluster.leaseSeconds * 1000,
          channels,
          singletons: { start: () => singletons.start(channels), stop: singletons.stop },
          worker: { room: () => config.agent.maxConcurrentTurns, drop: (key) => worker.drop(key) },
          run: (msg) => bus.inbound.push(msg),
          recoverHelpers: (orphaned) => helpers.recoverInterrupted(orphaned, "the pincer process running it stopped"),
        });
        stopWatching = await watch();
        // And every second, in case a notification was missed while the connection was down.
        outboxPoll = setInterval(() => {
          for (const channel of channels) bus.outboundRecorded(channel.name);
        }, 1000);
        return;
      }
      const served = new Set(channels.map((c) => c.name));
      await resumePending({ journal, bus, log }, served);
      // After the re-queue, or a notice published here would be queued twice.
      await helpers.recoverInterrupted();
      workerDone = worker.run();
      // All at once, so no platform's outage holds up another's start; one that cannot start is one error line.
      await Promise.all(
        channels.map(async (channel) => {
          try {
            await channel.start();
            running.push(channel);
          } catch (err) {
            log.error(`${channel.name} is off: ${err instanceof Error ? err.message : String(err)}`);
          }
        }),
      );
      stopWatching = await watch();
      singletons.start(channels);
    },
    stop(): Promise<void> {
      stopping ??= (async () => {
        // Clustered: the channels and singletons stop with their roles, given back at once.
        clearInterval(outboxPoll);
        await cluster?.stopRoles();
        singletons.stop();
        await stopWatching?.();
        await Promise.allSettled(running.map((c) => c.stop()));
        await helpers.stop();
        await worker.stop();
        await cluster?.leave();
        await mcp.close();
        await consolidator.stop();
        bus.close();
        await workerDone;
        await store.close();
      })();
      return stopping;
    },
  };
}
