import { describe, expect, it } from "vitest";
import type { ClusterView } from "../store/cluster.js";
import { clusterLines, clusterVerdict, expectedRoles, liveHolders } from "./status-text.js";

const view: ClusterView = {
  processes: [
    { id: "a", host: "alpha", pid: 11, startedAt: 0, heartbeatAgeMs: 800 },
    { id: "b", host: "beta", pid: 22, startedAt: 0, heartbeatAgeMs: 95_000 },
  ],
  leases: [
    { name: "channel:telegram", holder: "a", epoch: 12, expiresInMs: 4200 },
    { name: "scheduler", holder: "a", epoch: 3, expiresInMs: 4100 },
    { name: "turn:telegram:1", holder: "a", epoch: 40, expiresInMs: 3000 },
    { name: "turn:discord:9", holder: "a", epoch: 41, expiresInMs: 3000 },
    { name: "helper:h-1", holder: "a", epoch: 42, expiresInMs: 3000 },
    // Expired: b died holding it, and nobody has taken it yet.
    { name: "channel:discord", holder: "b", epoch: 7, expiresInMs: -60_000 },
  ],
};
const roles = expectedRoles(["telegram", "discord"]);

describe("the cluster in pincer status", () => {
  it("lists processes with heartbeats and holdings, and each role's holder or nobody", () => {
    expect(roles).toEqual(["channel:telegram", "channel:discord", "scheduler"]);
    expect(clusterLines(view, roles)).toEqual([
      "cluster:       2 processes",
      "  alpha:11 heartbeat 0.8 s ago; roles: channel:telegram, scheduler; turns running: 2; helpers running: 1",
      "  beta:22 heartbeat 95 s ago (silent: presumed dead); roles: none; turns running: 0",
      "  channel:telegram   alpha:11 (epoch 12, renewed within 4.2 s)",
      "  channel:discord    nobody",
      "  scheduler          alpha:11 (epoch 3, renewed within 4.1 s)",
    ]);
  });
});

describe("the cluster in /healthz", () => {
  it("names the live holder of each role, never of a turn, an expired lease or a silent process", () => {
    const silent: ClusterView = {
      ...view,
      leases: [...view.leases, { name: "scheduler-b", holder: "b", epoch: 9, expiresInMs: 5000 }],
    };
    expect(liveHolders(silent)).toEqual(
      new Map([
        ["channel:telegram", "alpha:11"],
        ["scheduler", "alpha:11"],
      ]),
    );
  });
});

describe("the cluster in pincer doctor", () => {
  it("fails while a role is held by nobody alive, naming it", () => {
    expect(clusterVerdict(view, roles)).toEqual({
      ok: false,
      detail: "1 live process; held by nobody: channel:discord (start a pincer gateway with this PINCER_DATABASE_URL)",
    });
  });

  it("counts a role held by a silent process as free", () => {
    const stale: ClusterView = {
      processes: [{ id: "b", host: "beta", pid: 22, startedAt: 0, heartbeatAgeMs: 95_000 }],
      leases: [{ name: "scheduler", holder: "b", epoch: 1, expiresInMs: 1000 }],
    };
    expect(clusterVerdict(stale, ["scheduler"]).ok).toBe(false);
  });

  it("passes when every role is held by a live process", () => {
    expect(clusterVerdict(view, ["channel:telegram", "scheduler"])).toEqual({
      ok: true,
      detail: "1 live process; every role is held",
    });
  });
});
