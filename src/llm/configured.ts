import type { Logger } from "pino";
import type { Config } from "../config/config.js";
import { type ContextLimits, discoverContext } from "./context-limits.js";
import { ContextRefusedError, createOpenAIModel, type Model } from "./model.js";
import { CircuitBreaker, createResilientModel, type Endpoint } from "./resilient.js";
import { withVisionFallback } from "./vision-fallback.js";

type EndpointSpec = { name: string; baseUrl: string; model: string };
const at = (baseUrl: string, model: string) => ({ name: `${model} at ${baseUrl}`, baseUrl, model });

/**
 * The endpoints a turn tries in order: the chat's choice of `agent.models` (by name; the main
 * model when absent or no longer configured), then `agent.fallbackModels`.
 */
function chainOf(config: Config, choice?: string): EndpointSpec[] {
  const chosen = config.agent.models.find((m) => m.name === choice);
  const first = chosen
    ? at((chosen.baseUrl ?? config.openai.baseUrl).replace(/\/+$/, ""), chosen.name)
    : at(config.openai.baseUrl, config.openai.model);
  const fallbacks = config.agent.fallbackModels.map((f) =>
    typeof f === "string"
      ? at(config.openai.baseUrl, f)
      : at((f.baseUrl ?? config.openai.baseUrl).replace(/\/+$/, ""), f.model),
  );
  return [first, ...fallbacks.filter((f) => f.name !== first.name)];
}

/** Every endpoint any turn may reach (each chain), once each: what the context is discovered for. */
function configuredEndpoints(config: Config): EndpointSpec[] {
  const all = [undefined, ...config.agent.models.map((m) => m.name)].flatMap((choice) => chainOf(config, choice));
  return [...new Map(all.map((e) => [e.name, e])).values()];
}

/** The agent's models: the main chain, and one for each of `agent.models` a chat chose (see chain). */
export interface ConfiguredModels {
  model: Model;
  /**
   * The chain of a chat's choice with the context it takes now, made once (its endpoints and
   * their circuits shared with every chain); undefined is the main chain.
   */
  chain(choice: string | undefined): { model: Model; window: () => number; recheck?: () => Promise<boolean> };
}

/**
 * The agent's model as configured: the main endpoint and model (or a chat's choice of
 * `agent.models`), then each of `agent.fallbackModels` (a model name on the same endpoint, or
 * `{model, baseUrl}`), each endpoint behind its own circuit breaker. Circuits opening and closing
 * are logged once each. With `limits`, the context an endpoint's refusal names is remembered for
 * that endpoint. A chain whose endpoint refuses images describes them in text from then on.
 */
export function createConfiguredModels(
  config: Config,
  log: Logger,
  main?: Model,
  limits?: ContextLimits,
): ConfiguredModels {
  const settings = {
    apiKey: config.openai.apiKey,
    timeoutSeconds: config.agent.modelTimeoutSeconds,
    retries: config.agent.modelRetries,
    stream: config.agent.stream,
    temperature: config.agent.temperature,
  };
  const { failureThreshold, coolDownSeconds } = config.agent.circuitBreaker;
  const breaker = { failureThreshold, coolDownMs: coolDownSeconds * 1000 };
  const mainName = chainOf(config)[0].name;
  const endpoints = new Map<string, Endpoint>();
  const endpoint = ({ name, baseUrl, model }: EndpointSpec): Endpoint => {
    let made = endpoints.get(name);
    if (!made) {
      const client = (name === mainName && main) || createOpenAIModel({ ...settings, baseUrl, model });
      made = { name, model: learnsContext(client, name, limits), breaker: new CircuitBreaker(breaker) };
      endpoints.set(name, made);
    }
    return made;
  };
  const events = {
    onOpen: (name: string, err: unknown) =>
      log.warn(
        { endpoint: name, err: err instanceof Error ? err.message : String(err), coolDownSeconds },
        "model endpoint keeps failing; not asking it again until the cool-down is over",
      ),
    onClose: (name: string) => log.info({ endpoint: name }, "model endpoint answers again"),
  };
  const onImageRefused = (err: Error) =>
    log.warn({ err: err.message }, "the model endpoint refused an image; images are described in text from now on");
  const chains = new Map<string, ReturnType<ConfiguredModels["chain"]>>();
  const chain = (choice: string | undefined) => {
    const specs = chainOf(config, choice);
    let made = chains.get(specs[0].name);
    if (!made) {
      const model = withVisionFallback(createResilientModel(specs.map(endpoint), breaker, events), onImageRefused);
      made = limits
        ? { model, window: contextWindow(config, limits, choice), recheck: contextRecheck(config, limits, choice) }
        : { model, window: () => config.agent.contextTokens };
      chains.set(specs[0].name, made);
    }
    return made;
  };
  return { model: chain(undefined).model, chain };
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

/** The helpers' model: agent.helperModel on the configured endpoint, else (or when a model is injected) the main one. */
export function createHelperModel(config: Config, main: Model, injected: boolean): Model {
  const { helperModel, modelTimeoutSeconds, modelRetries, stream, temperature } = config.agent;
  if (!helperModel || injected) return main;
  const settings = { timeoutSeconds: modelTimeoutSeconds, retries: modelRetries, stream, temperature };
  return createOpenAIModel({ ...config.openai, model: helperModel, ...settings });
}

/**
 * The context every request of a chain (the main one, or a chat's choice) must fit now:
 * `agent.contextTokens`, or less where one of its endpoints is known to take less (a fallback
 * gets the same request).
 */
export function contextWindow(config: Config, limits: ContextLimits, choice?: string): () => number {
  const names = chainOf(config, choice).map((e) => e.name);
  return () =>
    Math.min(config.agent.contextTokens, ...names.map((name) => limits.get(name) ?? Number.POSITIVE_INFINITY));
}

/**
 * For a turn that does not fit a window smaller than `agent.contextTokens`: asks the endpoints
 * again (a server restarted with a bigger context says so), and forgets what a refusal taught
 * where the server says nothing (the next refusal teaches it again). True when the window of
 * the chain (the main one, or a chat's choice) grew.
 */
export function contextRecheck(config: Config, limits: ContextLimits, choice?: string): () => Promise<boolean> {
  const window = contextWindow(config, limits, choice);
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
