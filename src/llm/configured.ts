import type { Logger } from "pino";
import type { Config } from "../config/config.js";
import { createOpenAIModel, type Model } from "./model.js";
import { createResilientModel, type Endpoint } from "./resilient.js";

/**
 * The agent's model as configured: the main endpoint and model, then each of
 * `agent.fallbackModels` (a model name on the same endpoint, or `{model, baseUrl}`), each behind
 * its own circuit breaker. Circuits opening and closing are logged once each.
 */
export function createConfiguredModel(config: Config, log: Logger, main?: Model): Model {
  const settings = {
    apiKey: config.openai.apiKey,
    timeoutSeconds: config.agent.modelTimeoutSeconds,
    retries: config.agent.modelRetries,
    stream: config.agent.stream,
    temperature: config.agent.temperature,
  };
  const endpoint = (baseUrl: string, model: string): Endpoint => ({
    name: `${model} at ${baseUrl}`,
    model: createOpenAIModel({ ...settings, baseUrl, model }),
  });
  const first: Endpoint = main
    ? { name: `${config.openai.model} at ${config.openai.baseUrl}`, model: main }
    : endpoint(config.openai.baseUrl, config.openai.model);
  const fallbacks = config.agent.fallbackModels.map((f) =>
    typeof f === "string"
      ? endpoint(config.openai.baseUrl, f)
      : endpoint((f.baseUrl ?? config.openai.baseUrl).replace(/\/+$/, ""), f.model),
  );
  const { failureThreshold, coolDownSeconds } = config.agent.circuitBreaker;
  return createResilientModel(
    [first, ...fallbacks],
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
