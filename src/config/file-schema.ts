import type { FromSchema } from "json-schema-to-ts";

/** A section of the file: known keys only, each with its default (ajv fills in a missing section too). */
function section<const P extends Record<string, object>>(properties: P) {
  return { type: "object", additionalProperties: false, default: {}, properties } as const;
}

/** An entry of a list or a map: known keys only, the `required` ones there. */
function entry<const P extends Record<string, object>, const R extends readonly (keyof P)[]>(
  required: R,
  properties: P,
) {
  return { type: "object", additionalProperties: false, required, properties } as const;
}

function list<const I extends object>(items: I) {
  return { type: "array", default: [], items } as const;
}

/** A map from a name (NAME) to `entry`, empty by default. */
function named<const E extends object>(entry: E) {
  return { type: "object", default: {}, propertyNames: NAME, additionalProperties: entry } as const;
}

const TEXT = { type: "string", minLength: 1 } as const;

/** An environment variable's name (holding a key or a token: the file never holds secrets). */
const ENV_NAME = { type: "string", pattern: "^[A-Za-z_][A-Za-z0-9_]*$" } as const;

/** An agent's or an account's name: it becomes part of session keys, paths and roles. */
const NAME = { pattern: "^[a-z0-9][a-z0-9_-]{0,31}$" } as const;

/** Another endpoint than the default one, with its own key. */
const ENDPOINT = { baseUrl: { type: "string", pattern: "^https?://" }, apiKeyEnv: ENV_NAME } as const;

/** The sections an agent may override; each is checked as the top-level one once merged over it (agents.ts). */
export const AGENT_SECTIONS = ["agent", "exec", "approvals", "mcp", "memory", "heartbeat", "message"] as const;
const OVERRIDES = Object.fromEntries(AGENT_SECTIONS.map((name) => [name, { type: "object" }])) as Record<
  (typeof AGENT_SECTIONS)[number],
  { readonly type: "object" }
>;

/** One bot account of a platform (`accounts.telegram.NAME`): the variable holding its token and its agent. */
const account = entry(["tokenEnv"], {
  tokenEnv: ENV_NAME,
  agent: { type: "string", ...NAME },
  allowFrom: { type: "array", items: { type: "string", pattern: "^(\\*|\\d+)$" } },
});

/** The optional config file (PINCER_CONFIG); ajv fills in the defaults, so pincer reads a complete object. The
 * settings: docs/configuration.md. */
export const fileSchema = {
  type: "object",
  additionalProperties: false,
  properties: {
    agent: section({
      maxIterations: { type: "integer", minimum: 1, maximum: 500, default: 40 },
      maxConcurrentTurns: { type: "integer", minimum: 1, maximum: 256, default: 8 },
      contextTokens: { type: "integer", minimum: 1000, default: 32000 },
      toolTimeoutSeconds: { type: "integer", minimum: 1, default: 300 },
      modelTimeoutSeconds: { type: "integer", minimum: 1, default: 120 },
      modelRetries: { type: "integer", minimum: 0, maximum: 10, default: 2 },
      stream: { type: "boolean", default: false },
      streamReplies: { enum: ["private", "all", "off"], default: "private" },
      temperature: { type: "number", minimum: 0, maximum: 2 },
      helperModel: TEXT,
      models: list(entry(["name"], { name: TEXT, ...ENDPOINT, label: TEXT })),
      fallbackModels: list({ anyOf: [TEXT, entry(["model"], { model: TEXT, ...ENDPOINT })] }),
      circuitBreaker: section({
        failureThreshold: { type: "integer", minimum: 1, default: 3 },
        coolDownSeconds: { type: "number", minimum: 0.01, default: 30 },
      }),
      waitForModel: section({
        refusedSeconds: { type: "number", minimum: 1, default: 60 },
        refusedTries: { type: "integer", minimum: 1, default: 10 },
        outageHours: { type: "number", minimum: 0.01, default: 24 },
      }),
      vision: { type: "boolean", default: true },
      transcriptionModel: { type: "string", minLength: 1, default: "gpt-4o-mini-transcribe" },
      maxToolResultChars: { type: "integer", minimum: 1000, default: 16000 },
      disabledTools: { type: "array", items: TEXT, default: [] },
      // Models (by the name sent) whose endpoint caches only at explicit `cache_control` markers (Anthropic's).
      cacheMarkers: { type: "array", items: TEXT, default: [] },
    }),
    exec: section({
      network: { type: "boolean", default: false },
      timeoutSeconds: { type: "integer", minimum: 1, default: 60 },
      maxTimeoutSeconds: { type: "integer", minimum: 1, default: 600 },
      envAllowlist: { type: "array", items: { type: "string" }, default: [] },
      denyPatterns: { type: "array", items: { type: "string" }, default: [] },
      allowPatterns: { type: "array", items: { type: "string" }, default: [] },
      restrictToWorkspace: { type: "boolean", default: true },
      maxOutputChars: { type: "integer", minimum: 100, default: 10000 },
      // Per command, inside the sandbox; 0 turns a limit off. docs/security.md explains each.
      maxProcesses: { type: "integer", minimum: 0, default: 256 },
      maxFileSizeMB: { type: "integer", minimum: 0, default: 1024 },
      maxMemoryMB: { type: "integer", minimum: 0, default: 2048 },
    }),
    // Ask in the chat before a command or a listed tool runs (src/approvals; docs/security.md).
    approvals: section({
      exec: { enum: ["off", "ask", "unlisted"], default: "off" },
      tools: { type: "array", items: TEXT, default: [] },
      timeoutSeconds: { type: "number", minimum: 5, default: 300 },
    }),
    telegram: section({
      allowedGroups: { type: "array", items: { type: "string" }, default: [] },
      webhookUrl: { type: "string" },
      webhookSecret: { type: "string" },
      webhookPort: { type: "integer", minimum: 1, maximum: 65535, default: 8443 },
    }),
    discord: section({
      allowedChannels: { type: "array", items: { type: "string" }, default: [] },
      allowBots: { type: "boolean", default: false },
    }),
    cron: section({
      minEverySeconds: { type: "integer", minimum: 1, default: 60 },
      // Jobs one person may have at once (paused ones too), over all their chats.
      maxJobsPerOwner: { type: "integer", minimum: 1, default: 50 },
      tools: { type: "array", items: { type: "string" } },
      // Stop rules every job gets unless it sets its own (docs/configuration.md).
      pauseAfterFailures: { type: "integer", minimum: 1, default: 3 },
      maxRuns: { type: "integer", minimum: 1 },
      endAfterDays: { type: "number", exclusiveMinimum: 0 },
      runTokens: { type: "integer", minimum: 1 },
      runCost: { type: "number", exclusiveMinimum: 0 },
      dayTokens: { type: "integer", minimum: 1 },
      dayCost: { type: "number", exclusiveMinimum: 0 },
    }),
    memory: section({
      promptChars: { type: "integer", minimum: 0, default: 8000 },
      shareWithGroups: { type: "boolean", default: false },
      shareWithGuests: { type: "boolean", default: false },
      consolidate: { type: "boolean", default: true },
    }),
    media: section({
      maxBytes: { type: "integer", minimum: 1, default: 20 * 1024 * 1024 },
      maxAudioSeconds: { type: "integer", minimum: 1, default: 600 },
    }),
    message: section({ allowedTargets: { type: "array", items: { type: "string" }, default: [] } }),
    helpers: section({
      maxConcurrent: { type: "integer", minimum: 1, maximum: 64, default: 4 },
      maxPerConversation: { type: "integer", minimum: 1, maximum: 64, default: 2 },
      maxIterations: { type: "integer", minimum: 1, maximum: 500, default: 20 },
      timeoutSeconds: { type: "integer", minimum: 1, default: 900 },
    }),
    progress: section({
      enabled: { type: "boolean", default: true },
      afterSeconds: { type: "number", exclusiveMinimum: 0, default: 3 },
    }),
    heartbeat: section({ intervalMinutes: { type: "integer", minimum: 1 }, target: { type: "string" } }),
    web: section({
      allow: { type: "array", items: { type: "string" }, default: [] },
      timeoutSeconds: { type: "integer", minimum: 1, maximum: 300, default: 20 },
      maxBytes: { type: "integer", minimum: 1024, default: 2 * 1024 * 1024 },
      maxChars: { type: "integer", minimum: 100, maximum: 100000, default: 20000 },
      maxRedirects: { type: "integer", minimum: 0, maximum: 5, default: 5 },
      userAgent: TEXT,
      search: section({
        provider: { enum: ["brave", "searxng"] },
        baseUrl: { type: "string" },
        timeoutSeconds: { type: "integer", minimum: 1, maximum: 120, default: 15 },
      }),
    }),
    delivery: section({
      retryMinSeconds: { type: "number", minimum: 0.01, default: 1 },
      retryMaxSeconds: { type: "number", minimum: 0.01, default: 30 },
      deadLetterAfterHours: { type: "number", minimum: 0.001, default: 24 },
    }),
    cluster: section({
      // How long a role or a conversation stays with a process that stopped renewing it.
      leaseSeconds: { type: "number", minimum: 2, maximum: 300, default: 10 },
      // A query of the store with no answer after this long fails instead of hanging (a silent partition).
      queryTimeoutSeconds: { type: "number", minimum: 1, maximum: 3600, default: 30 },
    }),
    retention: section({
      auditDays: { type: "number", minimum: 0.001, default: 30 },
      archivedConversationDays: { type: "number", minimum: 0.001, default: 90 },
      deadLetterDays: { type: "number", minimum: 0.001, default: 30 },
      mediaDays: { type: "number", minimum: 0.001, default: 30 },
      // At least a month and a day: the monthly budgets sum the whole month.
      usageDays: { type: "number", minimum: 32, default: 400 },
      jobRunDays: { type: "number", minimum: 0.001, default: 90 },
    }),
    usage: section({
      dailyTokens: { type: "integer", minimum: 1 },
      monthlyCost: { type: "number", exclusiveMinimum: 0 },
      chatDailyTokens: { type: "integer", minimum: 1 },
      chatMonthlyCost: { type: "number", exclusiveMinimum: 0 },
      prices: {
        type: "object",
        default: {},
        additionalProperties: entry(["prompt", "completion"], {
          prompt: { type: "number", minimum: 0 },
          completion: { type: "number", minimum: 0 },
          cached: { type: "number", minimum: 0 },
        }),
      },
    }),
    // Several assistants in one gateway (agents.ts; docs/configuration.md#several-agents).
    agents: named(
      entry([], {
        workspace: TEXT,
        model: { anyOf: [TEXT, entry(["name"], { name: TEXT, ...ENDPOINT })] },
        ...OVERRIDES,
      }),
    ),
    accounts: section({ telegram: named(account), discord: named(account) }),
    bindings: list(
      entry(["agent", "channel"], {
        agent: TEXT,
        channel: { enum: ["telegram", "discord"] },
        account: TEXT,
        chat: TEXT,
        thread: TEXT,
        guild: TEXT,
      }),
    ),
    // People's roles (src/access/roles.ts; docs/configuration.md#people-and-roles): built-in owner, member, guest.
    roles: named(
      entry([], {
        tools: { type: "array", items: TEXT },
        approvals: entry([], {
          exec: { enum: ["off", "ask", "unlisted"] },
          tools: { type: "array", items: TEXT },
        }),
        usage: entry([], {
          dailyTokens: { type: "integer", minimum: 1 },
          monthlyCost: { type: "number", exclusiveMinimum: 0 },
        }),
        models: { type: "boolean" },
        writeShared: { type: "boolean" },
      }),
    ),
    people: section({ defaultRole: { type: "string", ...NAME, default: "guest" } }),
    // Spoken replies and speech on the owner's machine (src/voice; docs/configuration.md#voice).
    voice: section({
      replies: { enum: ["off", "auto", "always"], default: "off" },
      tts: entry([], {
        model: TEXT,
        voice: TEXT,
        command: { type: "array", minItems: 1, items: TEXT },
        language: TEXT,
        speed: { type: "number", minimum: 0.25, maximum: 4 },
      }),
      stt: entry(["command"], { command: { type: "array", minItems: 1, items: TEXT } }),
      maxSpokenChars: { type: "integer", minimum: 50, maximum: 20000, default: 1500 },
      timeoutSeconds: { type: "number", minimum: 1, maximum: 600, default: 60 },
      maxConcurrentEncodes: { type: "integer", minimum: 1, maximum: 16, default: 2 },
      maxAudioBytes: { type: "integer", minimum: 10000, default: 20 * 1024 * 1024 },
    }),
    mcp: section({
      servers: {
        type: "object",
        default: {},
        propertyNames: { minLength: 1, maxLength: 40 },
        additionalProperties: entry([], {
          command: TEXT,
          args: { type: "array", items: { type: "string" }, default: [] },
          env: { type: "object", additionalProperties: { type: "string" }, default: {} },
          cwd: TEXT,
          url: TEXT,
          headers: { type: "object", additionalProperties: { type: "string" }, default: {} },
          enabledTools: { type: "array", items: { type: "string" } },
          toolTimeoutSeconds: { type: "integer", minimum: 1, default: 60 },
          trusted: { type: "boolean", default: false },
        }),
      },
    }),
  },
} as const;

/** The config file as pincer reads it: a property with a default is always there (ajv fills it in). `web.search.apiKey`
 * comes from BRAVE_API_KEY, never from the file (see web.ts). */
export type FileConfig = FromSchema<typeof fileSchema> & { web: { search: { apiKey?: string } } };

/** One of `agent.models`: a model name, on `baseUrl` (the default endpoint when absent), shown as `label`. */
export type ModelSetting = FileConfig["agent"]["models"][number];

/** One MCP server as written in the config file: `command` (stdio) or `url` (streamable HTTP). */
export type McpServerFileSettings = FileConfig["mcp"]["servers"][string];
