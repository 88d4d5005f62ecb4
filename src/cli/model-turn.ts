import { existsSync } from "node:fs";
import { join } from "node:path";
import { buildSystemPrompt } from "../agent/context.js";
import { requestBudget } from "../agent/context-budget.js";
import { listSkills } from "../agent/skills.js";
import type { Config } from "../config/config.js";
import { ContextLimits, discoverContext } from "../llm/context-limits.js";
import {
  type ChatMessage,
  ContextRefusedError,
  createOpenAIModel,
  ModelError,
  type ModelReply,
  type ToolSchema,
} from "../llm/model.js";
import { createTokenCounter } from "../llm/tokens.js";
import { contextLimitsPath, packageRoot, skillDirs } from "../paths.js";
import { openSqliteStore } from "../store/sqlite/sqlite-store.js";
import { createTools } from "../tools/index.js";
import { ToolRegistry } from "../tools/registry.js";
import type { Check } from "./probes.js";

/** A local model on a CPU reads a few thousand tokens of prompt in well under this. */
const MAX_TIMEOUT_SECONDS = 60;
const PROBE_TOOL = "list_dir";
const ASK = `This is a check by \`pincer doctor\` that you can use tools. Call the ${PROBE_TOOL} tool once now (no arguments are needed) and write nothing else.`;
/** Tool calls written into the text, as models do when the server does not parse them. */
const TEXT_CALL = /<tool_call>|\[TOOL_CALLS\]|<\|python_tag\|>|"name"\s*:\s*"[^"]+"\s*,\s*"arguments"/;

const n = (x: number) => x.toLocaleString("en-US");

/** A first turn's request (system prompt, every tool's schema, a user message) sent once for real, and what would
 * stop a turn: no tool support, a context smaller than that fixed prompt, a chat template that refuses it. */
export async function probeModelTurn(config: Config): Promise<Check> {
  const { system, tools } = fixedPrompt(config);
  const messages: ChatMessage[] = [
    { role: "system", content: system },
    { role: "user", content: ASK },
  ];
  const counter = createTokenCounter();
  const fixed = counter.request(messages, tools);
  const check = (status: Check["status"], detail: string): Check => ({ name: "model turn", status, detail });
  const endpoint = `${config.openai.model} at ${config.openai.baseUrl}`;
  const timeoutSeconds = Math.min(config.agent.modelTimeoutSeconds, MAX_TIMEOUT_SECONDS);
  const told = await discoverContext({ ...config.openai, timeoutMs: 5000 });
  const quiet = { info() {}, warn() {} };
  const known = told?.tokens ?? new ContextLimits(contextLimitsPath(config.home), quiet).get(endpoint);
  const where = told ? `from the server's /${told.source === "props" ? "props" : "v1/models"}` : "as pincer learned it";
  const window = Math.min(config.agent.contextTokens, known ?? Number.POSITIVE_INFINITY);
  const biggest = [...tools]
    .map((t) => ({ name: t.function.name, tokens: counter.tools([t]) }))
    .sort((a, b) => b.tokens - a.tokens)
    .slice(0, 4)
    .map((t) => `${t.name} (${n(t.tokens)})`)
    .join(", ");
  const tooSmall = (size: string) =>
    `${size}, smaller than pincer's fixed prompt (about ${n(fixed)} tokens: instructions and ${tools.length} tool schemas), so no turn can succeed: start the server with a larger context (llama.cpp -c 8192, Ollama num_ctx or OLLAMA_CONTEXT_LENGTH, LM Studio's context length), or turn off tools in agent.disabledTools (the biggest: ${biggest})`;

  const model = createOpenAIModel({ ...config.openai, timeoutSeconds, retries: 0, stream: config.agent.stream });
  let reply: ModelReply;
  try {
    reply = await model.complete({ messages, tools });
  } catch (err) {
    return check("fail", refusalAdvice(err, tooSmall, timeoutSeconds));
  }
  const context = known
    ? `context ${n(window)} tokens${window < config.agent.contextTokens ? ` (${where})` : " (agent.contextTokens)"}`
    : `context not told by the server, agent.contextTokens ${n(config.agent.contextTokens)} assumed`;
  if (requestBudget(window) < fixed)
    return check("fail", tooSmall(`the model's context is ${n(window)} tokens (${where})`));
  const calls = reply.toolCalls.map((c) => c.name);
  if (calls.length > 0) {
    return check(
      "ok",
      `a request with ${tools.length} tools was answered with a tool call (${calls.join(", ")}); ${context}; the fixed prompt takes about ${n(fixed)}`,
    );
  }
  // Text calls naming an offered tool come back as real ones; the rest are listed in `discarded`.
  const why =
    reply.discarded?.length || TEXT_CALL.test(reply.content)
      ? "the model writes its tool calls as text instead of the API's tool_calls: the server does not parse them (llama.cpp: --jinja; vLLM: --enable-auto-tool-choice --tool-call-parser NAME; Ollama: a model whose template has tools)"
      : "the model answered without calling the offered tool: its chat template may not support tools (llama-server then drops them silently; use --jinja with a template that has tools), or the model declined";
  return check("warn", `${why}; ${context}`);
}

/** What an error to the tool-offering request means for a turn, with what to do. */
function refusalAdvice(err: unknown, tooSmall: (size: string) => string, timeoutSeconds: number): string {
  const message = err instanceof Error ? err.message : String(err);
  if (err instanceof ContextRefusedError) {
    const { contextTokens, promptTokens } = err.refusal;
    const size = contextTokens ? `the server's context is ${n(contextTokens)} tokens` : "the server's context";
    return `${tooSmall(size)}${promptTokens ? `; the server counted the request as ${n(promptTokens)} tokens` : ""}`;
  }
  if (/--jinja/.test(message)) {
    return "llama-server refuses every request that offers tools: restart it with --jinja (and without --no-jinja)";
  }
  // A wrong key or model name (401, 404) is its own message; the request itself is refused with these.
  if (err instanceof ModelError && (err.status === 400 || err.status === 422 || (err.status ?? 0) >= 500)) {
    return `${message}, to a request like a turn's (system prompt, tools, one message): the server's chat template may not take tools or a system message (llama.cpp: --jinja and a template with tools; vLLM: --enable-auto-tool-choice --tool-call-parser NAME)`;
  }
  if (/did not answer in time/.test(message)) {
    return `${message}: no answer within ${timeoutSeconds} s to a request like a turn's; the model may be too slow for this machine, or agent.modelTimeoutSeconds too short`;
  }
  return message;
}

/** The system prompt and tool schemas of a direct chat's first turn, built as the daemon builds them. */
function fixedPrompt(config: Config): { system: string; tools: ToolSchema[] } {
  // The tools only need a store to close over: an empty one in memory, never the real database.
  const store = openSqliteStore(":memory:");
  try {
    const registry = new ToolRegistry(config.agent.toolTimeoutSeconds, config.agent.maxToolResultChars);
    for (const tool of createTools({ config, store })) {
      if (!config.agent.disabledTools.includes(tool.name)) registry.register(tool);
    }
    const skills = listSkills(skillDirs(config.workspace)).filter((skill) => skill.missing.length === 0);
    const system = buildSystemPrompt({
      // Before the first start, the template the daemon will copy into the workspace.
      workspace: existsSync(config.workspace) ? config.workspace : join(packageRoot(), "workspace"),
      skills,
      timezone: config.timezone,
      inbound: { sessionKey: "console:doctor", isGroup: false },
      memory: { include: true, maxChars: config.memory.promptChars },
    });
    return { system, tools: registry.toSchemas() };
  } finally {
    store.db.close();
  }
}
