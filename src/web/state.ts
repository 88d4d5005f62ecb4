import type { App } from "../app.js";
import type { Channel, ChannelStatus } from "../bus/channel.js";
import { roleText, withRole } from "../cli/people.js";
import { agentsOverview } from "../config/agents.js";
import { collectJobs } from "./jobs-section.js";
import { collectUsage } from "./usage-section.js";

type ChannelView = { name: string } & ChannelStatus;

/** Everything the page shows besides one conversation's history: one snapshot, also served as JSON. */
export type DashboardState = Awaited<ReturnType<typeof collectState>>;

/** Each skill's `missing` says why it is left out of the prompt. */
type Skill = { name: string; description: string; missing: string[] };

/** Each channel's state. Clustered, a channel runs on the one process holding its role: elsewhere it is up when a live
 * process holds it (named in `detail`), and stopped when nobody does. */
export async function channelStates(app: App, channels: Channel[]): Promise<ChannelView[]> {
  // A database that does not answer leaves each channel with what this process knows of it.
  const cluster = await app.clusterRoles?.().catch(() => undefined);
  return channels.map((c) => {
    const role = `channel:${c.name}`;
    if (!cluster || cluster.here.includes(role)) return { name: c.name, ...(c.status?.() ?? { state: "connected" }) };
    const holder = cluster.holders.get(role);
    return holder
      ? { name: c.name, state: "connected", detail: `held by ${holder}` }
      : { name: c.name, state: "stopped", detail: "no process of the cluster holds it" };
  });
}

export async function collectState(sources: {
  app: App;
  channels: () => Channel[];
  skills: () => Skill[];
  startedAt: number;
}) {
  const { app, channels, skills, startedAt } = sources;
  const { dashboard, pairing, approvals } = app.store;
  const database = await dashboard.ping();
  // A database that does not answer leaves the page with what the process knows by itself.
  const [inboxPending, outboxPending, conversations, jobs, requests] = database
    ? await Promise.all([
        dashboard.inboxPending(),
        dashboard.outboxPending(),
        dashboard.conversations(),
        collectJobs(app.store, app.config.timezone),
        pairing.pending(),
      ])
    : [0, 0, [], [], []];
  const views = await channelStates(app, channels());
  return {
    model: app.config.openai.model,
    startedAt,
    timezone: app.config.timezone,
    database,
    /** Clustered mode only: who holds which role, each process's heartbeat. */
    cluster: await app.clusterLines?.().catch((err: Error) => [`cluster: ${err.message}`]),
    channels: views,
    agents: agentsOverview(app.config, (route) => views.find((c) => c.name === route)?.state ?? "stopped"),
    running: app.worker.lanes.runningSessions,
    helpers: app.helpers.list(),
    queued: app.worker.lanes.load.queued,
    inboxPending,
    outboxPending,
    conversations,
    jobs,
    pairing: requests,
    people: database
      ? (await app.store.people.list()).map((p) => ({ ...p, role: roleText(withRole(app.config, p)) }))
      : [],
    roles: ["owner", "member", "guest", ...Object.keys(app.config.roles), "default"],
    skills: skills(),
    approvals:
      app.approvals && database
        ? { pending: await approvals.pending(), allowed: await approvals.allowedEntries() }
        : undefined,
    usage: database ? await collectUsage(app.store.usage, app.config.timezone, Date.now()) : undefined,
  };
}

/** `/healthz`: healthy when the database answers and every configured channel is connected. */
export function healthOf(state: { database: boolean; channels: ChannelView[] }) {
  const ok = state.database && state.channels.every((c) => c.state === "connected");
  return {
    status: ok ? "ok" : "degraded",
    database: state.database ? "ok" : "down",
    channels: Object.fromEntries(state.channels.map(({ name, ...status }) => [name, status])),
  };
}
