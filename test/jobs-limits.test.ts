import { afterEach, describe, expect, it } from "vitest";
import { collectJobs } from "../src/web/jobs-section.js";
import type { FakeReply } from "./fakes/openai-server.js";
import { quiet } from "./helpers/app.js";
import { pincer } from "./helpers/daemon.js";
import { message, privateChat, startTelegramHarness, type TelegramHarness, user } from "./helpers/telegram.js";
import { until } from "./helpers/until.js";

/**
 * Stop rules a user sets on one job, end to end: real grammy against the fake Bot API, the fake model calling the
 * `cron` tool, the real SQLite file, and the built `pincer cron limit` run beside the daemon on the same home. A job
 * that reached its runs stops firing, one past its end stops, a day's token cap skips the day's further runs; and a
 * person may hold only `cron.maxJobsPerOwner` jobs.
 */
const SCHEDULER_PREFIX = "[system: scheduler]";
const harnesses: TelegramHarness[] = [];

afterEach(async () => {
  for (const h of harnesses.splice(0)) await h.close();
});

/** "every N s: TEXT" becomes a cron add; a run answers `RAN: TEXT` and reports 50 + 10 tokens. */
function jobModel(request: { messages: Array<{ role: string; content?: unknown }> }): FakeReply {
  const last = request.messages.at(-1);
  const text = typeof last?.content === "string" ? last.content : "";
  if (last?.role === "tool") return { content: `Set: ${text.split("\n")[0]}` };
  if (text.startsWith(SCHEDULER_PREFIX)) {
    const asked = /What the user asked for when they set it up: (.*)/.exec(text)?.[1];
    return { content: `RAN: ${asked}`, usage: { prompt_tokens: 50, completion_tokens: 10 } };
  }
  const [, seconds, what] = /every (\d+) s: (.*)/.exec(text) ?? [];
  return { toolCalls: [{ name: "cron", arguments: { action: "add", message: what, every_seconds: Number(seconds) } }] };
}

async function start(adjust?: (cron: TelegramHarness["app"]["config"]["cron"]) => void) {
  const h = await startTelegramHarness({
    allowFrom: "42,43",
    adjust: (config) => {
      config.cron.minEverySeconds = 1;
      adjust?.(config.cron);
    },
  });
  harnesses.push(h);
  h.model.respond(jobModel);
  const say = (text: string, from = 42) => h.telegram.pushUpdate(message(privateChat(from), user(from), { text }));
  const answers = (prefix: string) => h.telegram.sent.filter((m) => m.text.startsWith(prefix)).map((m) => m.text);
  const runs = async (jobId: string) => (await h.app.store.jobRuns.recent([jobId], 100)).get(jobId) ?? [];
  const cli = (...args: string[]) => pincer(["cron", ...args], h.home, { PINCER_TIMEZONE: "UTC" });
  /** A job made in the chat, paused at once (before its first run) so its rules are set before it runs. */
  const pausedJob = async (text: string) => {
    say(text);
    const [job] = await until(async () => {
      const jobs = await h.app.store.jobs.listAll();
      return jobs.length > 0 ? jobs : undefined;
    }, "the job made");
    expect((await h.app.jobs.pause(job.id)).ok).toBe(true);
    return job;
  };
  return { h, say, answers, runs, cli, pausedJob };
}

describe("stop rules a user sets on a job", () => {
  it("pincer cron limit --max-runs: the job stops firing after that many runs and is gone", async () => {
    const { h, answers, runs, cli, pausedJob } = await start();
    const job = await pausedJob("every 1 s: stretch");

    // Bad input is refused with one sentence, and nothing changes.
    const bad = await cli("limit", job.id, "--max-runs", "0");
    expect([bad.code, bad.stdout.trim()]).toEqual([
      1,
      'At most runs must be a whole number above 0 (or none); got "0".',
    ]);
    const past = await cli("limit", job.id, "--ends-at", "2020-01-01T00:00");
    expect([past.code, past.stdout.trim()]).toEqual([1, "Ends at: 2020-01-01T00:00 (UTC) is not in the future."]);
    expect((await h.app.store.jobs.get(job.id))?.limits).toEqual({});

    const set = await cli("limit", job.id, "--max-runs", "3", "--run-tokens", "5000");
    expect(set.code).toBe(0);
    expect(set.stdout.trim()).toBe(`Stop rules of job ${job.id}: maxRuns 3, runTokens 5000.`);
    expect((await cli("show", job.id)).stdout).toContain("stop rules: maxRuns 3, runTokens 5000");
    expect((await h.app.jobs.resume(job.id)).ok).toBe(true);

    await until(
      async () => (await h.app.store.jobs.get(job.id)) === undefined,
      "the job gone after its last run",
      30_000,
    );
    await until(async () => (await runs(job.id)).every((r) => r.outcome === "ok"), "its runs recorded");
    // The job's row is gone and nothing waits in the inbox or outbox: no run is left to fire or deliver.
    await quiet(h.app, "telegram");
    expect(answers("RAN: stretch")).toHaveLength(3);
    expect((await runs(job.id)).map((r) => r.outcome)).toEqual(["ok", "ok", "ok"]);
    expect((await cli("list")).stdout.trim()).toBe("No scheduled jobs.");
    // The control page still shows it, finished, with its history.
    const [gone] = await collectJobs(h.app.store, "UTC");
    expect(gone).toMatchObject({ id: job.id, ended: true, message: "stretch" });
    expect(gone.runs.map((r) => r.delivered)).toEqual(["RAN: stretch", "RAN: stretch", "RAN: stretch"]);
  }, 90_000);

  it("pincer cron limit --ends-at: the job stops at its end date", async () => {
    const { h, answers, runs, cli, pausedJob } = await start();
    const job = await pausedJob("every 1 s: drink water");
    const endsAt = Math.ceil((Date.now() + 4000) / 1000) * 1000;
    const typed = new Date(endsAt).toISOString().slice(0, 19);
    const set = await cli("limit", job.id, "--ends-at", typed);
    expect(set.stdout.trim()).toBe(`Stop rules of job ${job.id}: endsAt ${typed.replace(/:00$/, "")}.`);
    expect((await h.app.store.jobs.get(job.id))?.limits).toEqual({ endsAt });
    expect((await h.app.jobs.resume(job.id)).ok).toBe(true);

    await until(async () => (await h.app.store.jobs.get(job.id)) === undefined, "the job gone at its end", 30_000);
    expect(Date.now()).toBeGreaterThanOrEqual(endsAt - 1000);
    await until(async () => (await runs(job.id)).every((r) => r.outcome === "ok"), "its runs recorded");
    const fired = await runs(job.id);
    expect(fired.length).toBeGreaterThan(0);
    expect(fired.every((run) => run.scheduledAt <= endsAt)).toBe(true);
    await until(() => answers("RAN: drink water").length === fired.length, "each run delivered");
    // The job's row is gone and nothing waits in the inbox or outbox: no run is left to fire or deliver.
    await quiet(h.app, "telegram");
    expect(answers("RAN: drink water")).toHaveLength(fired.length);
    expect(await runs(job.id)).toHaveLength(fired.length);
  }, 90_000);

  it("a day's token cap stops the job's further runs that day; each skipped slot is recorded with why", async () => {
    const { h, answers, runs, cli, pausedJob } = await start();
    const job = await pausedJob("every 1 s: read the news");
    expect((await cli("limit", job.id, "--day-tokens", "100")).code).toBe(0);
    expect((await h.app.jobs.resume(job.id)).ok).toBe(true);

    // 60 tokens a run: the first two run (0 and 60 used before them), then the day's 120 stop the rest.
    const skipped = async () => (await runs(job.id)).filter((r) => r.outcome === "skipped");
    await until(async () => (await skipped()).length >= 3, "three slots skipped at the cap", 30_000);
    expect(answers("RAN: read the news")).toHaveLength(2);
    expect(h.model.requests.filter((r) => JSON.stringify(r.messages).includes(SCHEDULER_PREFIX))).toHaveLength(2);
    const [newest] = await skipped();
    expect(newest.reason).toBe("not run: its runs used 120 of its 100 tokens for today");
    expect(newest.message).toBe("read the news");
    expect((await h.app.store.jobs.get(job.id))?.pausedAt).toBeUndefined();
  }, 90_000);

  it("a person may hold cron.maxJobsPerOwner jobs; one more is an Error for the model; another person may add", async () => {
    const { h, say, answers } = await start((cron) => {
      cron.maxJobsPerOwner = 2;
    });
    for (const [n, text] of ["every 600 s: one", "every 600 s: two", "every 600 s: three"].entries()) {
      say(text);
      await until(() => answers("Set:").length === n + 1, `answer ${n + 1}`);
    }
    expect(answers("Set:")[2]).toBe(
      "Set: Error: this person already has 2 jobs, the most one person may have (config cron.maxJobsPerOwner); remove one first.",
    );
    expect((await h.app.store.jobs.listAll()).map((j) => j.message).sort()).toEqual(["one", "two"]);

    say("every 600 s: four", 43);
    await until(() => answers("Set:").length === 4, "the other person's answer");
    expect(answers("Set:")[3]).toMatch(/^Set: Scheduled job \w+: every 10 min\.$/);
    expect((await h.app.store.jobs.listAll()).map((j) => j.owner?.userId).sort()).toEqual(["42", "42", "43"]);
  }, 90_000);
});
