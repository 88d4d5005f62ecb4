import { afterEach, describe, expect, it } from "vitest";
import type { App } from "../src/app.js";
import { type FakeOpenAI, startFakeOpenAI } from "./fakes/openai-server.js";
import { quiet, startedRecording } from "./helpers/app.js";
import { until } from "./helpers/until.js";

/**
 * Stop rules on the real worker and store: a job whose runs keep failing pauses itself and says so once; a run that
 * loops on tool calls stops at its job's token cap. The fake model fails or loops for the scheduled runs only.
 */
const SCHEDULER_PREFIX = "[system: scheduler]";
const apps: App[] = [];
let model: FakeOpenAI | undefined;

afterEach(async () => {
  for (const app of apps.splice(0)) await app.stop();
  await model?.close();
});

const isRun = (request: { messages: Array<{ content?: unknown }> }) =>
  request.messages.some((m) => typeof m.content === "string" && m.content.startsWith(SCHEDULER_PREFIX));

async function withJob(adjust?: Parameters<typeof startedRecording>[3]) {
  model = await startFakeOpenAI();
  const started = await startedRecording(model.url, apps, undefined, adjust);
  const job = await started.app.store.jobs.add({
    message: "check the news",
    schedule: { kind: "every", everySeconds: 3600, anchor: Date.now() },
    tz: "UTC",
    origin: { channel: "console", chatId: "c1", sessionKey: "console:c1", isGroup: false },
    owner: { channel: "console", userId: "user" },
    createdAt: Date.now(),
    nextRunAt: Date.now() + 3600_000,
  });
  const runs = async () => (await started.app.store.jobRuns.recent([job.id], 50)).get(job.id) ?? [];
  const runNow = async (count: number) => {
    expect((await started.app.jobs.run(job.id)).ok).toBe(true);
    await until(async () => (await runs()).filter((r) => r.outcome !== "running").length === count, `run ${count}`);
  };
  return { ...started, model, job, runs, runNow };
}

describe("stop rules of jobs", () => {
  it("a job failing three times in a row pauses itself and tells its chat once", async () => {
    const { app, model, job, runs, runNow, to } = await withJob();
    model.respond((request) =>
      isRun(request) ? { status: 400, message: "the news are unreachable" } : { content: "ok" },
    );
    for (const n of [1, 2]) await runNow(n);
    expect((await app.store.jobs.get(job.id))?.failures).toBe(2);
    expect((await app.store.jobs.get(job.id))?.pausedAt).toBeUndefined();
    await runNow(3);
    const paused = await app.store.jobs.get(job.id);
    expect(paused).toMatchObject({ failures: 3, pausedReason: "failures" });
    const notices = () => to("c1").filter((t) => t.includes("failed 3 times in a row"));
    await until(() => notices().length === 1, "the notice");
    expect(notices()[0]).toContain("so I paused it");
    expect(notices()[0]).toContain("the news are unreachable");
    // Run by hand while paused and failing again: no second notice.
    await runNow(4);
    // The run's end is recorded (runNow waited for it) and whatever it published is sent: a notice would be there now.
    await quiet(app, "console");
    expect(to("c1").filter((t) => t.includes("in a row"))).toHaveLength(1);
    expect((await runs()).map((r) => r.outcome)).toEqual(["failed", "failed", "failed", "failed"]);

    // Resumed and answered well, its failures are forgotten.
    model.respond(() => ({ content: "Here is the news." }));
    expect((await app.jobs.resume(job.id)).ok).toBe(true);
    await runNow(5);
    expect((await app.store.jobs.get(job.id))?.failures).toBe(0);
    expect((await runs())[0]).toMatchObject({ outcome: "ok", delivered: "Here is the news." });
  }, 60_000);

  it("a per-run token cap stops a runaway job that loops on tool calls", async () => {
    const { app, model, job, runs, runNow, to } = await withJob((config) => {
      config.cron.runTokens = 100;
    });
    // Every answer of a run is one more tool call (40 + 10 tokens): without a cap it goes on to agent.maxIterations.
    model.respond((request) =>
      isRun(request)
        ? { toolCalls: [{ name: "list_dir", arguments: {} }], usage: { prompt_tokens: 40, completion_tokens: 10 } }
        : { content: "ok" },
    );
    await runNow(1);
    const [run] = await runs();
    expect(run).toMatchObject({ outcome: "failed", promptTokens: 80, completionTokens: 20, toolCalls: 2 });
    expect(run.reason).toContain("this run used 100 tokens, its cap is 100");
    expect(model.requests.filter(isRun)).toHaveLength(2);
    await until(() => to("c1").find((t) => t.includes(`job ${job.id} stopped`)), "the stop told to the chat");
    expect(app.config.agent.maxIterations).toBeGreaterThan(2);
  }, 60_000);
});
