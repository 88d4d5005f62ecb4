import type { Logger } from "pino";
import { errorText } from "../bus/types.js";
import type { Fence } from "../store/cluster.js";
import type { ClusterMember } from "./member.js";

/** Work one process of the cluster does at a time (a channel's connection and outbox sender, the scheduler's tick):
 * `start` runs when this process gains the role, `stop` when it loses it (or shuts down); the two never overlap. */
export interface Role {
  name: string;
  start(fence: Fence): Promise<void>;
  stop(): Promise<void>;
}

interface RoleEntry {
  role: Role;
  /** What the lease says: the fence while held. */
  desired?: Fence;
  running: boolean;
  busy?: Promise<void>;
  retry?: NodeJS.Timeout;
}

/** How long a role whose start failed waits before this process tries for it again. */
const RETRY_AFTER_MS = 30_000;

/** Runs each role while this process holds its lease, and only then. */
export class RoleKeeper {
  private readonly entries = new Map<string, RoleEntry>();
  private stopping = false;

  constructor(private readonly deps: { member: ClusterMember; log: Pick<Logger, "info" | "warn" | "error"> }) {}

  add(role: Role): void {
    const entry: RoleEntry = { role, running: false };
    this.entries.set(role.name, entry);
    this.want(entry);
  }

  running(): string[] {
    return [...this.entries.values()].filter((e) => e.running).map((e) => e.role.name);
  }

  async stop(): Promise<void> {
    this.stopping = true;
    for (const entry of this.entries.values()) {
      clearTimeout(entry.retry);
      entry.desired = undefined;
      this.reconcile(entry);
    }
    for (const entry of this.entries.values()) {
      while (entry.busy) await entry.busy;
    }
    await Promise.all([...this.entries.keys()].map((name) => this.deps.member.unwant(name)));
  }

  private want(entry: RoleEntry): void {
    this.deps.member.want(entry.role.name, {
      gained: (fence) => {
        entry.desired = fence;
        this.reconcile(entry);
      },
      lost: () => {
        entry.desired = undefined;
        this.reconcile(entry);
      },
    });
  }

  /** Brings the role's work in line with its lease, one start or stop at a time. */
  private reconcile(entry: RoleEntry): void {
    if (entry.busy) return;
    const { role } = entry;
    const fence = entry.desired;
    if (fence && !entry.running && !this.stopping) {
      this.deps.log.info({ role: role.name, epoch: fence.epoch }, "this process takes the role");
      entry.busy = role.start(fence).then(
        () => {
          entry.running = true;
        },
        (err: unknown) => this.startFailed(entry, err),
      );
    } else if ((!fence || this.stopping) && entry.running) {
      this.deps.log.info({ role: role.name }, "this process gives the role up");
      entry.busy = role
        .stop()
        .catch((err: unknown) =>
          this.deps.log.error({ role: role.name, err: errorText(err) }, "a role did not stop cleanly"),
        )
        .finally(() => {
          entry.running = false;
        });
    } else return;
    void entry.busy.finally(() => {
      entry.busy = undefined;
      this.reconcile(entry);
    });
  }

  /** A role that cannot start here (a refused token, no network) is left to another process for a while. */
  private async startFailed(entry: RoleEntry, err: unknown): Promise<void> {
    const { name } = entry.role;
    this.deps.log.error(
      { role: name, err: errorText(err), retryAfterMs: RETRY_AFTER_MS },
      "could not start a role; giving it up",
    );
    entry.desired = undefined;
    await entry.role.stop().catch(() => {});
    await this.deps.member.unwant(name);
    if (this.stopping) return;
    entry.retry = setTimeout(() => {
      if (!this.stopping) this.want(entry);
    }, RETRY_AFTER_MS);
  }
}
