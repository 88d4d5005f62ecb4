/**
 * Clustered mode's promises that outlive a pause: a helper (spawn) declared interrupted while its process was paused
 * takes no further step when that process wakes. Built `pincer gateway` processes on one real PostgreSQL, against the
 * fake Bot API and the fake model.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { clusterOnPostgres } from "./helpers/cluster.js";
import { type Daemon, gatewayOnFakes } from "./helpers/daemon.js";
import { hasPostgres } from "./helpers/postgres.js";

const havePostgres = hasPostgres();
const LEASE_SECONDS = 3;
const STEPS = 6;
const fakes = gatewayOnFakes();
const { model, say } = fakes;
const isHelper = (content: unknown) => String(content).startsWith("You are a background helper");
const toolResults = (messages: Array<{ role: string }>) => messages.filter((m) => m.role === "tool").length;

describe.skipIf(!havePostgres)("a clustered helper whose process was paused past its lease", () => {
  const cluster = clusterOnPostgres(fakes, { prefix: "pincer-fencing-", leaseSeconds: LEASE_SECONDS });
  const { gateway, query } = cluster;

  it("takes no step after it was declared interrupted, and its chat hears of it once", async () => {
    const steps = join(cluster.home, "workspace", "steps.log");
    const stepsDone = () => (existsSync(steps) ? readFileSync(steps, "utf8").trim().split("\n").length : 0);
    model.respond((request) => {
      if (isHelper(request.messages[0]?.content)) {
        const done = toolResults(request.messages);
        if (done >= STEPS) return { content: "all steps done" };
        // The answer after the first step comes late: the test pauses the process while it waits for it.
        return {
          toolCalls: [{ name: "exec", arguments: { command: `echo step ${done + 1} >> steps.log` } }],
          delayMs: done === 1 ? 1500 : 0,
        };
      }
      const last = request.messages.at(-1);
      if (last?.role === "tool") return { content: "A helper is on it." };
      const text = String(last?.content ?? "");
      if (text.startsWith("[system: helper]"))
        return { content: `NOTICE ${text.includes("finished") ? "done" : "lost"}` };
      return { toolCalls: [{ name: "spawn", arguments: { task: `write ${STEPS} steps`, label: "steps" } }] };
    });
    const daemons = [gateway(), gateway()];
    say("write the steps");
    const helperAsked = (after: number) =>
      model.requests.some((r) => isHelper(r.messages[0]?.content) && toolResults(r.messages) === after);
    await fakes.until(() => helperAsked(1), "the helper's first step", 60_000);
    const holder = (await query<{ holder: string }>("SELECT holder FROM cluster_leases WHERE name LIKE 'helper:%'"))[0];
    const runner = daemons.find((d) => holder && String(d.pid) === holder.holder.split(":").at(-2)) as Daemon;
    expect(runner).toBeDefined();
    runner.kill("SIGSTOP");
    try {
      await fakes.until(
        () => fakes.telegram.sent.some((m) => m.text.startsWith("NOTICE")),
        "the other process to declare the helper interrupted and tell the chat",
        60_000,
      );
    } finally {
      runner.kill("SIGCONT");
    }
    await fakes.until(
      () => runner.output.join("").includes("helper stopped: this process lost its lease"),
      "the woken process to stop its helper",
      30_000,
    );
    // With every message answered and sent and no turn held, nothing is left that could tell the chat again.
    await cluster.settled();
    expect(stepsDone()).toBe(1);
    expect(model.requests.filter((r) => isHelper(r.messages[0]?.content) && toolResults(r.messages) > 1)).toEqual([]);
    expect(fakes.telegram.sent.filter((m) => m.text.startsWith("NOTICE")).map((m) => m.text)).toEqual(["NOTICE lost"]);
    expect(await query("SELECT label, status FROM helper_runs")).toEqual([{ label: "steps", status: "interrupted" }]);
  }, 150_000);
});
