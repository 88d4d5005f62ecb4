import type { Logger } from "pino";
import type { Config } from "../config/config.js";
import { type ContextLimits, discoverContext } from "./context-limits.js";
import { ContextRefusedError, createOpenAIModel, type Model } from "./model.js";
import { createResilientModel, type Endpoint } from "./resilient.js";

/** Each configured endpoint: the main one first, then `agent.fallbackModels`. */
function configuredEndpoints(config: Config): Array<{ name: string; baseUrl: string; model: string }> {
  const at = (baseUrl: string, model: string) => ({ name: `${model} at ${baseUrl}`, baseUrl, model });
  return [
    at(config.openai.baseUrl, config.openai.model),
    ...config.agent.fallbackModels.map((f) =>
      typeof f === "string"
        ? at(config.openai.baseUrl, f)
        : at((f.baseUrl ?? config.openai.baseUrl).replace(/\/+$/, ""), f.model),
    ),
  ];
}

/**
 * The agent's model as configured: the main endpoint and model, then each of
 * `agent.fallbackModels` (a model name on the same endpoint, or `{model, baseUrl}`), each behind
 * its own circuit breaker. Circuits opening and closing are logged once each. With `limits`,
 * the context an endpoint's refusal names is remembered for that endpoint.
 */
export function createConfiguredModel(config: Config, log: Logger, main?: Model, limits?: ContextLimits): Model {
  const settings = {
    apiKey: config.openai.apiKey,
    timeoutSeconds: config.agent.modelTimeoutSeconds,
    retries: config.agent.modelRetries,
    stream: config.agent.stream,
    temperature: config.agent.temperature,
  };
  const endpoints = configuredEndpoints(config).map(
    ({ name, baseUrl, model }, i): Endpoint => ({
      name,
      model: learnsContext((i === 0 && main) || createOpenAIModel({ ...settings, baseUrl, model }), name, limits),
    }),
  );
  const { failureThreshold, coolDownSeconds } = config.agent.circuitBreaker;
  return createResilientModel(
    endpoints,
    { failureThreshold, coolDownMs: coolDownSeconds * 1000 },
    {
      onOpen: (name, err) =>
        log.warn(
          { endpoint: name, err: err instanceof Error ? err.message : String(err), coolDownSeconds },
          "model endpoint keeps failing; not asking it again until the cool-down is over",
        ),
      onClose: (name) => log.info({ endpoint: name }, "model endpoint answers again"),
    },
  );
}

function learnsContext(model: Model, endpoint: string, limits: ContextLimits | undefined): Model {
  if (!limits) return model;
  return {
    async complete(request) {
      try {
        return await model.complete(request);
      } catch (err) {
        const tokens = err instanceof ContextRefusedError ? err.refusal.contextTokens : undefined;
        if (tokens) limits.learn(endpoint, tokens, "refusal");
        throw err;
      }
    },
  };
}

/**
 * The context every request of the agent must fit now: `agent.contextTokens`, or less where a
 * configured endpoint is known to take less (a fallback gets the same request).
 */
export function contextWindow(config: Config, limits: ContextLimits): () => number {
  const names = configuredEndpoints(config).map((e) => e.name);
  return () =>
    Math.min(config.agent.contextTokens, ...names.map((name) => limits.get(name) ?? Number.POSITIVE_INFINITY));
}

/**
 * For a turn that does not fit a window smaller than `agent.contextTokens`: asks the endpoints
 * again (a server restarted with a bigger context says so), and forgets what a refusal taught
 * where the server says nothing (the next refusal teaches it again). True when the window grew.
 */
export function contextRecheck(config: Config, limits: ContextLimits): () => Promise<boolean> {
  const window = contextWindow(config, limits);
  return async () => {
    const before = window();
    if (before >= config.agent.contextTokens) return false;
    await discoverContexts(config, limits, 5000, true);
    return window() > before;
  };
}

/** Asks each configured endpoint for its context (`forget`: what a silent one's refusal taught); settles when all answered or gave up. */
export async function discoverContexts(config: Config, limits: ContextLimits, timeoutMs = 5000, forget = false) {
  await Promise.all(
    configuredEndpoints(config).map(async ({ name, baseUrl, model }) => {
      const found = await discoverContext({ baseUrl, model, apiKey: config.openai.apiKey, timeoutMs });
      if (found) limits.learn(name, found.tokens, found.source);
      else if (forget) limits.forgetRefusal(name);
    }),
  );
}
