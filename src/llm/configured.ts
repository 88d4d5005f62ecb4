import type { Logger } from "pino";
import type { Config } from "../config/config.js";
import { type ContextLimits, discoverContext } from "./context-limits.js";
import { type ChatMessage, ContextRefusedError, createOpenAIModel, type Model, ModelError } from "./model.js";
import { CircuitBreaker, createResilientModel, type Endpoint } from "./resilient.js";

/** An endpoint and the key sent there: its entry's own (`apiKeyEnv`), else the agent's main model's. */
export type EndpointSpec = { name: string; baseUrl: string; model: string; apiKey: string; keyEnv: string };

type Keyed = Pick<Config, "openai" | "keys">;

function at({ openai, keys }: Keyed, url: string | undefined, model: string, apiKeyEnv?: string): EndpointSpec {
  const baseUrl = (url ?? openai.baseUrl).replace(/\/+$/, "");
  const apiKey = apiKeyEnv ? (keys[apiKeyEnv] ?? "") : openai.apiKey;
  return { name: `${model} at ${baseUrl}`, baseUrl, model, apiKey, keyEnv: apiKeyEnv ?? openai.keyEnv };
}

/** The endpoints a turn tries in order: the chat's choice of `agent.models` (by name; the main model when absent or
 * no longer configured), then `agent.fallbackModels`. */
export function chainOf(config: Keyed & Pick<Config, "agent">, choice?: string): EndpointSpec[] {
  const chosen = config.agent.models.find((m) => m.name === choice);
  const first = chosen
    ? at(config, chosen.baseUrl, chosen.name, chosen.apiKeyEnv)
    : at(config, undefined, config.openai.model);
  const fallbacks = config.agent.fallbackModels.map((f) =>
    typeof f === "string" ? at(config, undefined, f) : at(config, f.baseUrl, f.model, f.apiKeyEnv),
  );
  return [first, ...fallbacks.filter((f) => f.name !== first.name)];
}

function modelAt({ agent }: Config, { apiKey, baseUrl, model }: Omit<EndpointSpec, "name">): Model {
  const { modelTimeoutSeconds: timeoutSeconds, modelRetries: retries, stream, temperature } = agent;
  const cacheMarkers = agent.cacheMarkers.includes(model);
  return createOpenAIModel({ apiKey, baseUrl, model, timeoutSeconds, retries, stream, temperature, cacheMarkers });
}

/** A chain as turns use it: its model, the context its requests must fit now, and a recheck of that context. */
type Chain = { model: Model } & ReturnType<typeof contextOf>;

/** The agent's models as configured: one chain per choice (`chain(undefined)` the main one), each made once; each
 * endpoint behind its own circuit breaker, shared by every chain. A refusal's context is remembered in `limits`. */
export function createConfiguredModels(config: Config, log: Logger, main: Model | undefined, limits: ContextLimits) {
  const { failureThreshold, coolDownSeconds } = config.agent.circuitBreaker;
  const breaker = { failureThreshold, coolDownMs: coolDownSeconds * 1000 };
  const mainName = chainOf(config)[0].name;
  const endpoints = new Map<string, Endpoint>();
  const endpoint = (spec: EndpointSpec): Endpoint => {
    const { name } = spec;
    const made = endpoints.get(name) ?? {
      name,
      model: (name === mainName && main) || modelAt(config, spec),
      breaker: new CircuitBreaker(breaker),
    };
    endpoints.set(name, made);
    return made;
  };
  const events = {
    onOpen: (name: string, err: unknown) =>
      log.warn(
        { endpoint: name, err: err instanceof Error ? err.message : String(err), coolDownSeconds },
        "model endpoint keeps failing; not asking it again until the cool-down is over",
      ),
    onClose: (name: string) => log.info({ endpoint: name }, "model endpoint answers again"),
    onError(name: string, err: unknown) {
      const tokens = err instanceof ContextRefusedError ? err.refusal.contextTokens : undefined;
      if (tokens) limits.learn(name, tokens, "refusal");
    },
  };
  const onImageRefused = (err: Error) =>
    log.warn({ err: err.message }, "the model endpoint refused an image; images are described in text from now on");
  const chains = new Map<string, Chain>();
  const chain = (choice: string | undefined): Chain => {
    const specs = chainOf(config, choice);
    let made = chains.get(specs[0].name);
    if (!made) {
      const model = withVisionFallback(createResilientModel(specs.map(endpoint), events), onImageRefused);
      made = { model, ...contextOf(config, limits, specs) };
      chains.set(specs[0].name, made);
    }
    return made;
  };
  return { model: chain(undefined).model, chain };
}

/** The helpers' model: agent.helperModel on the configured endpoint, else (or when a model is injected) the main one. */
export function createHelperModel(config: Config, main: Model, injected: boolean): Model {
  const { helperModel } = config.agent;
  return !helperModel || injected ? main : modelAt(config, { ...config.openai, model: helperModel });
}

/** `window`: `agent.contextTokens`, or less where any endpoint of the chain takes less (a fallback gets the same
 * request). `recheck`, for a turn that does not fit: asks the endpoints again (a restarted server may say more) and
 * forgets refusals where a server says nothing (the next refusal teaches it again); true when the window grew. */
function contextOf(config: Config, limits: ContextLimits, chain: EndpointSpec[]) {
  const window = () =>
    Math.min(config.agent.contextTokens, ...chain.map(({ name }) => limits.get(name) ?? Number.POSITIVE_INFINITY));
  const recheck = async () => {
    const before = window();
    if (before >= config.agent.contextTokens) return false;
    await discoverContexts(config, limits, true);
    return window() > before;
  };
  return { window, recheck };
}

/** Asks each configured endpoint for its context (`forget`: what a silent one's refusal taught). */
export async function discoverContexts(config: Config, limits: ContextLimits, forget = false) {
  const all = [undefined, ...config.agent.models.map((m) => m.name)].flatMap((choice) => chainOf(config, choice));
  const endpoints = new Map(all.map((e) => [e.name, e]));
  await Promise.all(
    [...endpoints.values()].map(async ({ name, baseUrl, model, apiKey }) => {
      const found = await discoverContext({ baseUrl, model, apiKey, timeoutMs: 5000 });
      if (found) limits.learn(name, found.tokens, found.source);
      else if (forget) limits.forgetRefusal(name);
    }),
  );
}

/** An endpoint refusing image parts (a 400 to a request with them) costs one failed request: it is sent again without
 * the images (their text references kept), and so is every later request. */
function withVisionFallback(model: Model, onRefused: (err: ModelError) => void): Model {
  let refused = false;
  return {
    async complete(request) {
      if (!request.messages.some(hasImages)) return model.complete(request);
      if (refused) return model.complete({ ...request, messages: request.messages.map(withoutImages) });
      try {
        return await model.complete(request);
      } catch (err) {
        if (!(err instanceof ModelError) || (err.status !== 400 && err.status !== 415 && err.status !== 422)) throw err;
        // Too long is not "no images": the loop fits the request and asks again.
        if (err instanceof ContextRefusedError) throw err;
        refused = true;
        onRefused(err);
        return model.complete({ ...request, messages: request.messages.map(withoutImages) });
      }
    },
  };
}

function hasImages(message: ChatMessage): boolean {
  return Array.isArray(message.content) && message.content.some((part) => part.type === "image_url");
}

/** The image parts replaced by one line saying so; the text parts keep the paths. */
function withoutImages(message: ChatMessage): ChatMessage {
  if (message.role !== "user" || !Array.isArray(message.content) || !hasImages(message)) return message;
  const text = message.content.flatMap((part) => (part.type === "text" ? [part.text] : []));
  text.push("[the attached image could not be shown: this model endpoint does not accept images]");
  return { role: "user", content: text.join("\n") };
}
