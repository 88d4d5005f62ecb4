/**
 * Jobs steered on a two-process cluster: built `pincer gateway` processes on one real PostgreSQL, each with its control
 * page, against the fake Bot API and the fake model. Every action is taken on the page of the process that does NOT
 * hold the scheduler, and the holder obeys: Pause stops the job firing, Resume brings it back, Run now delivers it
 * once, an edit shows in the next delivery.
 */
import { describe, expect, it } from "vitest";
import type { FakeReply } from "./fakes/openai-server.js";
import { clusterOnPostgres } from "./helpers/cluster.js";
import { type Daemon, gatewayOnFakes } from "./helpers/daemon.js";
import { freePort } from "./helpers/net.js";
import { hasPostgres } from "./helpers/postgres.js";
import { login } from "./helpers/web.js";

const havePostgres = hasPostgres();
const SCHEDULER_PREFIX = "[system: scheduler]";
const TOKEN = "jobs-cluster-page-token";
const EVERY = 2;
const fakes = gatewayOnFakes();
const { model, say } = fakes;

function reminderModel(request: { messages: Array<{ role: string; content?: unknown }> }): FakeReply {
  const last = request.messages.at(-1);
  const text = typeof last?.content === "string" ? last.content : "";
  if (last?.role === "tool") return { content: `Set: ${text.split("\n")[0]}` };
  if (text.startsWith(SCHEDULER_PREFIX)) {
    return { content: `REMINDER: ${/What the user asked for when they set it up: (.*)/.exec(text)?.[1]}` };
  }
  // "a control job": one never paused, whose runs show the scheduler keeps time while the other job is paused.
  const message = text.includes("control") ? "control" : "stretch";
  return { toolCalls: [{ name: "cron", arguments: { action: "add", message, every_seconds: EVERY } }] };
}

describe.skipIf(!havePostgres)("jobs on a clustered pincer", () => {
  const cluster = clusterOnPostgres(fakes, {
    prefix: "pincer-jobs-cluster-",
    leaseSeconds: 3,
    config: { cron: { minEverySeconds: 1 } },
  });
  const { query } = cluster;

  it("an action on one process's page is obeyed by the scheduler on the other", async () => {
    model.respond(reminderModel);
    const ports = [await freePort(), await freePort()];
    const daemons = ports.map((port) =>
      cluster.gateway({ PINCER_WEB_ADDR: `127.0.0.1:${port}`, PINCER_WEB_TOKEN: TOKEN }),
    );
    await cluster.allUp(daemons);
    const holder = await cluster.holderOf("scheduler", daemons);
    // The page of the other process: it runs no scheduler, yet its actions must take effect.
    const other = daemons.indexOf(daemons.find((d) => d !== holder) as Daemon);
    const base = `http://127.0.0.1:${ports[other]}`;
    const session = await fakes.until(() => login(base, TOKEN).catch(() => undefined), "the other page up", 30_000);
    const act = async (action: string, body: Record<string, string>) => {
      const res = await fetch(`${base}/api/jobs/${action}`, {
        method: "POST",
        headers: { ...session, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      expect(res.status, `${action}: ${await res.clone().text()}`).toBe(200);
    };
    // No session, no action (the page's other actions are guarded the same way).
    const refused = await fetch(`${base}/api/jobs/pause`, { method: "POST", body: "{}" });
    expect(refused.status).toBe(401);

    say("remind me to stretch every 2 s");
    await fakes.until(() => fakes.telegram.sent.find((m) => m.text.startsWith("Set:")), "the confirmation", 30_000);
    const [{ id }] = await query<{ id: string }>("SELECT id FROM cron_jobs");
    const deliveries = (text = "REMINDER: stretch") => fakes.telegram.sent.filter((m) => m.text.startsWith(text));
    await fakes.until(() => deliveries().length >= 1, "the first delivery", 30_000);
    say("and a control job every 2 s");
    await fakes.until(() => deliveries("REMINDER: control").length >= 1, "the control job's first delivery", 30_000);
    /** Two more runs of the control job delivered: the scheduler went through two periods of the paused job too. */
    const twoPeriods = async () => {
      const seen = deliveries("REMINDER: control").length;
      await fakes.until(() => deliveries("REMINDER: control").length >= seen + 2, "two periods", 30_000);
    };

    const running = async () =>
      Number(
        (
          await query<{ n: string }>("SELECT count(*) AS n FROM job_runs WHERE outcome = 'running' AND job_id = $1", [
            id,
          ])
        )[0].n,
      );
    const settle = () => fakes.until(async () => (await running()) === 0, "the runs under way to finish", 30_000);
    await act("pause", { id });
    await settle();
    const whilePaused = deliveries().length;
    await twoPeriods();
    expect(deliveries()).toHaveLength(whilePaused);

    await act("resume", { id });
    await fakes.until(() => deliveries().length > whilePaused, "a delivery after Resume", 30_000);
    await act("pause", { id });
    await settle();

    const beforeRun = deliveries().length;
    await act("run", { id });
    await fakes.until(() => deliveries().length === beforeRun + 1, "the run asked for", 30_000);
    await twoPeriods();
    expect(deliveries()).toHaveLength(beforeRun + 1);

    await act("edit", { id, message: "drink water", schedule: `every ${EVERY} s`, tz: "UTC" });
    await act("run", { id });
    await fakes.until(() => deliveries("REMINDER: drink water").length === 1, "the edited text delivered", 30_000);
    await settle();
    const runs = await query<{ outcome: string; trigger: string }>(
      "SELECT outcome, trigger FROM job_runs WHERE job_id = $1",
      [id],
    );
    expect(runs).toHaveLength(deliveries().length + deliveries("REMINDER: drink water").length);
    expect(runs.every((r) => r.outcome === "ok")).toBe(true);
    expect(runs.filter((r) => r.trigger === "manual")).toHaveLength(2);
  }, 180_000);
});
