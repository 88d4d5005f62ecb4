import type { InboundMessage } from "../bus/types.js";
import { isScheduledRun } from "../scheduler/run-message.js";
import type { ToolRegistry } from "../tools/registry.js";

/** Never in a scheduled run, whatever the config says: no one watches it, so no new jobs (runaway loops), no helpers. */
const NEVER_IN_SCHEDULED_RUNS: readonly string[] = ["cron", "spawn"];

/** Which tools a scheduled run is offered: `cron.tools` when set (else every tool), minus the never-list. */
export function scheduledRunOffers(configured: readonly string[] | undefined): (name: string) => boolean {
  return (name) => !NEVER_IN_SCHEDULED_RUNS.includes(name) && (configured === undefined || configured.includes(name));
}

export function withheldInScheduledRun(name: string): string {
  return NEVER_IN_SCHEDULED_RUNS.includes(name)
    ? `${name} is not available in a scheduled run: it may not create jobs or start helpers. Deliver the result in your reply instead.`
    : `${name} is not available in a scheduled run (config cron.tools lists the tools it may use).`;
}

/** A run nobody watches (every message pincer addresses to itself: reminders, the heartbeat, helpers' results). */
export function nobodyWatches(msg: Pick<InboundMessage, "channel">): boolean {
  return msg.channel === "system";
}

/** The tools a run may use: runs nobody watches get fewer (no untrusted MCP tools), enforced by the registry. */
export function registryFor(msg: InboundMessage, registry: ToolRegistry, cronTools?: readonly string[]): ToolRegistry {
  const scheduled = isScheduledRun(msg)
    ? registry.restricted(scheduledRunOffers(cronTools), withheldInScheduledRun)
    : registry;
  return nobodyWatches(msg) ? scheduled.withoutUntrusted() : scheduled;
}
