import type { InboundMessage } from "../bus/types.js";
import { isScheduledRun } from "../scheduler/delivery.js";
import type { ToolRegistry } from "../tools/registry.js";

/**
 * Tools a scheduled run never gets, whatever the config says: no one is there to watch it, so
 * it may not create jobs (no runaway loops) or start helpers.
 */
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

/**
 * A run nobody watches: every message pincer addresses to itself (a reminder or job, the
 * heartbeat, the turn that relays a helper's result). Such runs do not get untrusted MCP tools.
 */
export function nobodyWatches(msg: Pick<InboundMessage, "channel" | "sessionKey" | "meta">): boolean {
  return msg.channel === "system";
}

/** The tools a run may use: runs with no one watching get fewer, enforced by the registry itself. */
export function registryFor(msg: InboundMessage, registry: ToolRegistry, cronTools?: readonly string[]): ToolRegistry {
  const scheduled = isScheduledRun(msg)
    ? registry.restricted(scheduledRunOffers(cronTools), withheldInScheduledRun)
    : registry;
  return nobodyWatches(msg) ? scheduled.withoutUntrusted() : scheduled;
}
