import { existsSync, statSync } from "node:fs";
import { agentsOverview } from "../config/agents.js";
import type { Config } from "../config/config.js";
import { databaseHost } from "../config/database-url.js";
import { databasePath, storeLocation } from "../paths.js";
import { withStore } from "../store/open.js";
import { lastKnownMcpStatus } from "../tools/mcp/check.js";
import { pageUrl } from "../web/control-page.js";

/** `pincer status`: what is stored and what is waiting, read straight from the database. */
export async function statusText(config: Config): Promise<string> {
  const path = databasePath(config.home);
  if (!config.databaseUrl && !existsSync(path)) {
    return `No database yet at ${path}: pincer has not run with PINCER_HOME=${config.home}.`;
  }
  const [s, helpers] = await withStore(storeLocation(config), (store) =>
    Promise.all([store.status.summary(), store.helperRuns.recent(10)]),
  );
  const running = helpers.filter((h) => h.status === "running");
  // Whether each bot is connected, as the running gateway's /healthz says (its page's address is PINCER_WEB_ADDR).
  const health = config.webAddr ? `${pageUrl(config.webAddr)}healthz` : undefined;
  const live =
    health &&
    (await fetch(health, { signal: AbortSignal.timeout(3000) })
      .then(async (res) => ((await res.json()) as { channels: Record<string, { state: string }> }).channels)
      .catch(() => undefined));
  const stateOf = (route: string) => (live ? (live[route]?.state ?? "not connected") : "unknown");
  const { agents, accounts, bindings } = agentsOverview(config, stateOf);
  const last = s.lastToolCall;
  return [
    `home:          ${config.home}`,
    `database:      ${config.databaseUrl ? `PostgreSQL at ${databaseHost(config.databaseUrl)}` : `${path} (${(statSync(path).size / 1024).toFixed(0)} KiB)`}`,
    "agents:",
    ...agents.map((a) => `  ${a.name.padEnd(14)} ${a.model}, workspace ${a.workspace}`),
    `accounts:      ${accounts.length === 0 ? "none" : live ? "" : `(no gateway answers at ${health ?? "PINCER_WEB_ADDR: off"})`}`.trimEnd(),
    ...accounts.map((a) => `  ${a.route.padEnd(14)} agent ${a.agent}, ${a.state}`),
    `bindings:      ${bindings.length ? "" : "none (each bot's own agent answers)"}`.trimEnd(),
    ...bindings.map((b) => `  ${b}`),
    `conversations: ${s.openConversations} open, ${s.messages} messages`,
    `waiting:       ${s.pendingInbound} inbound, ${s.pendingOutbound} outbound`,
    `dead letters:  ${s.deadLetters} (replies given up on; see the log)`,
    `tool calls:    ${s.toolCalls}${last ? `, last ${last.tool} ${last.ok ? "ok" : "failed"} at ${new Date(last.at).toISOString()}` : ""}`,
    `helpers:       ${running.length} running${helpers.length ? `; latest ${helpers.length}:` : ""}`,
    ...helpers.map((h) => {
      const task = h.task.replace(/\s+/g, " ").trim();
      const shown = task.length > 60 ? `${task.slice(0, 59)}…` : task;
      return `  ${h.id} ${h.status.padEnd(11)} ${new Date(h.startedAt).toISOString()} ${h.sessionKey}${h.label ? ` "${h.label}"` : ""}: ${shown}`;
    }),
    ...lastKnownMcpStatus(config),
    ...(config.databaseUrl ? (await clusterReport(config, config.databaseUrl)).lines : []),
  ].join("\n");
}

export async function clusterReport(config: Config, url: string) {
  const { configuredChannels, inspectCluster } = await import("../cluster/inspect.js");
  return inspectCluster(url, configuredChannels(config));
}
