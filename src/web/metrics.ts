import { createRequire } from "node:module";
import type { TurnObserver } from "../agent/turn-stats.js";

/** The Prometheus metrics (names in docs/operations.md; dashboards depend on them) on a registry of their own.
 * prom-client (~10 MB) is required here, so a daemon without the control page never loads it. A tool `knownTool` denies
 * counts as "unknown" (bounded labels); the queue's depth comes from `countQueue` (the worker is made after this). */
export function createMetrics(sources: { outboxPending: () => Promise<number>; knownTool: (name: string) => boolean }) {
  const require = createRequire(import.meta.url);
  const part = (name: string) => require(`prom-client/lib/${name}`);
  // Its parts, not its index, which also loads the push gateway, Summary and the cluster's (~10 ms of a start).
  const { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } = {
    Counter: part("counter"),
    collectDefaultMetrics: part("defaultMetrics"),
    Gauge: part("gauge"),
    Histogram: part("histogram"),
    Registry: part("registry"),
  } as typeof import("prom-client");
  const registry = new Registry();
  let queueDepth = () => 0;
  collectDefaultMetrics({ register: registry });
  const turns = new Counter({
    name: "pincer_turns_total",
    help: "Turns run, by outcome (ok, stopped, model_error, error).",
    labelNames: ["outcome"],
    registers: [registry],
  });
  const turnDuration = new Histogram({
    name: "pincer_turn_duration_seconds",
    help: "Wall time of a turn, from its start to its reply.",
    buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
    registers: [registry],
  });
  const modelDuration = new Histogram({
    name: "pincer_model_request_duration_seconds",
    help: "Time of one request to the model endpoint (retries included), by outcome.",
    labelNames: ["outcome"],
    buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
    registers: [registry],
  });
  const toolCalls = new Counter({
    name: "pincer_tool_calls_total",
    help: "Tool calls, by tool and outcome (ok or error).",
    labelNames: ["tool", "outcome"],
    registers: [registry],
  });
  new Gauge({
    name: "pincer_queue_depth",
    help: "Messages waiting for their conversation's running turn or a free slot.",
    registers: [registry],
    collect() {
      this.set(queueDepth());
    },
  });
  new Gauge({
    name: "pincer_outbox_pending",
    help: "Replies recorded but not yet delivered to their channel.",
    registers: [registry],
    async collect() {
      this.set(await sources.outboxPending());
    },
  });
  // Every label a series can have starts at zero, so rate() works from the first scrape.
  for (const outcome of ["ok", "stopped", "model_error", "error"]) turns.labels(outcome);
  const observer: TurnObserver = {
    modelRequest: (seconds, ok) => modelDuration.labels(ok ? "ok" : "error").observe(seconds),
    toolCall: (tool, ok) => toolCalls.labels(sources.knownTool(tool) ? tool : "unknown", ok ? "ok" : "error").inc(),
    turnFinished: (report) => {
      turns.labels(report.outcome).inc();
      turnDuration.observe(report.durationMs / 1000);
    },
  };
  return {
    registry,
    observer,
    countQueue: (depth: () => number) => {
      queueDepth = depth;
    },
  };
}
