/** Clustered mode's leases, as every part of pincer sees them (only the PostgreSQL engine has them). */

/** A lease as its holder knows it: the epoch grows every time the lease changes hands. */
export interface Fence {
  name: string;
  epoch: number;
}

export interface ClusterProcess {
  id: string;
  host: string;
  pid: number;
}

/** The cluster as `pincer status` and the control page show it; ages come from the database's clock. */
export interface ClusterView {
  processes: Array<ClusterProcess & { startedAt: number; heartbeatAgeMs: number }>;
  leases: Array<{ name: string; holder: string; epoch: number; expiresInMs: number }>;
}

/** A write was refused because the lease it was made under changed hands. */
export class FencedOutError extends Error {
  constructor(readonly fence: Fence) {
    super(`the lease "${fence.name}" (epoch ${fence.epoch}) was taken over by another process`);
    this.name = "FencedOutError";
  }
}
