import { expect, it } from "vitest";
import type { InboundMessage } from "../../src/bus/types.js";
import { runMessage } from "../../src/scheduler/run-message.js";
import type { CronJob, NewJob, Store } from "../../src/store/store.js";
import type { OpenStore } from "./store-conformance.js";

/** A fresh store on the engine under test, and a way to open a second process's store on the same database. */
export type Fresh = () => Promise<{ store: Store; open: OpenStore }>;

/** A job every minute in Telegram chat 1, owned by user 42. */
export const job = (overrides: Partial<NewJob> = {}): NewJob => ({
  message: "stretch",
  schedule: { kind: "every", everySeconds: 60, anchor: 1_000_000 },
  tz: "UTC",
  origin: { channel: "telegram", chatId: "1", sessionKey: "telegram:1", isGroup: false },
  owner: { channel: "telegram", userId: "42" },
  createdAt: 1_000_000,
  nextRunAt: 1_060_000,
  ...overrides,
});

/** The inbound message of one of that job's runs, as the scheduler queues it. */
export const run = (id: string): InboundMessage => ({
  id,
  channel: "system",
  chatId: "1",
  senderId: "cron",
  senderName: "cron",
  text: "stretch",
  media: [],
  isGroup: false,
  mentionsBot: true,
  receivedAt: 1_060_000,
  sessionKey: "telegram:1",
  run: { kind: "cron", jobId: "j1", scheduledAt: 1_060_000 },
});

const call = { kind: "reminder", model: "m", cachedTokens: 0, estimated: false, sessionKey: "telegram:1" };

/** Jobs' runs, pauses, edits and runs asked for: what the page, /jobs and the CLI rely on, the same on both engines. */
export function describeJobsConformance(fresh: Fresh): void {
  it("pauses, resumes and edits a job; a paused job is not due and its slot is not taken", async () => {
    const { store } = await fresh();
    const { id } = await store.jobs.add(job({ limits: { maxRuns: 3, runCost: 0.5 } }));
    expect((await store.jobs.get(id))?.limits).toEqual({ maxRuns: 3, runCost: 0.5 });
    expect(await store.jobs.pause(id, 1_050_000, "user")).toBe(true);
    expect(await store.jobs.pause(id, 1_050_001, "user")).toBe(false);
    expect(await store.jobs.get(id)).toMatchObject({ pausedAt: 1_050_000, pausedReason: "user" });
    expect(await store.jobs.due(2_000_000)).toEqual([]);
    expect(await store.jobs.earliestNextRun()).toBeUndefined();
    const slot = { jobId: id, scheduledAt: 1_060_000, nextRunAt: 1_120_000, run: run("cron:x:1"), ranAt: 1_060_000 };
    expect(await store.jobs.takeSlot(slot)).toEqual({ taken: false, accepted: false });
    // A resume after a revoke wakes only jobs the revoke paused: this one someone paused on purpose.
    expect(await store.jobs.resume(id, 1_180_000)).toBe(true);
    expect(await store.jobs.resume(id, 1_180_000)).toBe(false);
    expect(await store.jobs.get(id)).toMatchObject({ nextRunAt: 1_180_000, failures: 0 });
    expect((await store.jobs.get(id))?.pausedAt).toBeUndefined();

    const edited = {
      message: "drink water",
      schedule: { kind: "cron", expr: "0 9 * * *", tz: "Europe/Berlin" },
    } as const;
    expect(await store.jobs.edit(id, { ...edited, tz: "Europe/Berlin", nextRunAt: 5_000_000 })).toBe(true);
    expect(await store.jobs.get(id)).toMatchObject({ ...edited, tz: "Europe/Berlin", nextRunAt: 5_000_000 });
    // Stop rules are kept unless the edit gives them.
    expect((await store.jobs.get(id))?.limits).toEqual({ maxRuns: 3, runCost: 0.5 });
    expect(await store.jobs.edit("nope", { ...edited, tz: "UTC", nextRunAt: 1 })).toBe(false);
  });

  it("closes runs left running whose turn is over, lists a gone job's runs, and sets a job's own stop rules", async () => {
    const { store } = await fresh();
    const { id } = await store.jobs.add(job());
    const fire = async (at: number) => {
      const msg = {
        ...run(`cron:${id}:${at}`),
        run: { kind: "cron", jobId: id, scheduledAt: at, reminder: "stretch" },
      };
      const slot = { jobId: id, scheduledAt: at, nextRunAt: at + 60_000, run: msg as InboundMessage, ranAt: at };
      expect(await store.jobs.takeSlot(slot)).toEqual({ taken: true, accepted: true });
      return msg as InboundMessage;
    };
    const over = await fire(1_060_000);
    const waiting = await fire(1_120_000);
    await store.usage.record({ ...call, promptTokens: 30, completionTokens: 5, cost: 0.25, at: 1, runId: over.id });
    // The turn ended, and its process died before the run's end was recorded; the other run's message still waits.
    await store.turns.finishTurn(over, [], undefined);
    expect(await store.jobRuns.closeLeftOver(2_000_000)).toBe(1);
    const runs = (await store.jobRuns.recent([id])).get(id) ?? [];
    expect(runs).toMatchObject([
      { id: waiting.id, outcome: "running", message: "stretch" },
      { id: over.id, outcome: "interrupted", finishedAt: 2_000_000, promptTokens: 30, completionTokens: 5, cost: 0.25 },
    ]);
    expect(runs[1].reason).toContain("the process running it stopped");
    // An end recorded late (its process lived after all: another one marked it in between) still counts.
    const late = { outcome: "ok", toolCalls: 0, delivered: "done", at: 2_000_001 } as const;
    expect((await store.jobRuns.finish(over.id, late, 3)).recorded).toBe(true);
    expect(await store.jobRuns.closeLeftOver(2_000_002)).toBe(0);

    expect(await store.jobs.setLimits(id, { maxRuns: 2, endsAt: 9_000_000, dayTokens: 10 })).toBe(true);
    expect((await store.jobs.get(id))?.limits).toEqual({ maxRuns: 2, endsAt: 9_000_000, dayTokens: 10 });
    expect(await store.jobs.setLimits(id, { runCost: 0.5 })).toBe(true);
    expect((await store.jobs.get(id))?.limits).toEqual({ runCost: 0.5 });
    expect(await store.jobs.setLimits("nope", {})).toBe(false);

    expect((await store.jobRuns.ofEndedJobs()).size).toBe(0);
    expect(await store.jobs.remove(id)).toBe(true);
    const ended = await store.jobRuns.ofEndedJobs(1);
    expect([...ended.keys()]).toEqual([id]);
    expect(ended.get(id)).toMatchObject([{ id: waiting.id, message: "stretch" }]);
    // /forget takes a gone job's runs made for that person (their text is theirs), and only those.
    const bob = await store.people.identify("main", "discord", "77", "Bob");
    await store.usage.record({
      ...call,
      promptTokens: 1,
      completionTokens: 1,
      at: 2,
      runId: waiting.id,
      sessionKey: "discord:900",
      person: bob.id,
    });
    await store.forgetting.forget(bob);
    expect((await store.jobRuns.ofEndedJobs()).get(id)?.map((r) => r.id)).toEqual([over.id]);
  });

  it("fires a run asked for once, paused or not, with its row; repeated asks before it fires are one run", async () => {
    const { store, open } = await fresh();
    const other = await open();
    const { id } = await store.jobs.add(job());
    await store.jobs.pause(id, 1, "user");
    expect(await store.jobs.requestRun(id, 2_000)).toBe(true);
    expect(await other.jobs.requestRun(id, 3_000)).toBe(true);
    expect(await store.jobs.requestRun("nope", 3_000)).toBe(false);
    const [due] = await other.jobs.due(0);
    expect(due).toMatchObject({ id, runRequestedAt: 2_000 });
    expect(await store.jobs.earliestNextRun()).toBe(2_000);
    const asked = run(`cron:${id}:now:2000`);
    // The same ask taken twice at once (one connection: SQLite's in one thread would wait on each other): one run.
    const takes = await Promise.all([
      store.jobs.takeRunRequest(id, 2_000, asked, 2_500),
      store.jobs.takeRunRequest(id, 2_000, asked, 2_500),
    ]);
    expect(takes.filter(Boolean)).toHaveLength(1);
    expect(await store.jobs.get(id)).toMatchObject({ runCount: 1, lastDeliveryId: asked.id });
    expect((await store.jobs.get(id))?.runRequestedAt).toBeUndefined();
    expect(await store.jobs.due(0)).toEqual([]);
    const runs = (await store.jobRuns.recent([id])).get(id);
    expect(runs).toMatchObject([{ id: asked.id, trigger: "manual", firedAt: 2_500, outcome: "running" }]);
  });

  it("finishes a run with its usage; failures in a row pause the job once, a good run clears them", async () => {
    const { store } = await fresh();
    const { id } = await store.jobs.add(job());
    const fire = async (at: number) => {
      const msg = run(`cron:${id}:${at}`);
      const slot = { jobId: id, scheduledAt: at, nextRunAt: at + 60_000, run: msg, ranAt: at };
      expect(await store.jobs.takeSlot(slot)).toEqual({ taken: true, accepted: true });
      return msg.id;
    };
    const failed = (at: number) => ({ outcome: "failed", toolCalls: 2, reason: "model said no", at }) as const;

    const first = await fire(1_060_000);
    await store.usage.record({ ...call, promptTokens: 30, completionTokens: 5, cost: 0.25, at: 1, runId: first });
    await store.usage.record({ ...call, promptTokens: 20, completionTokens: 5, cost: 0.25, at: 2, runId: first });
    await store.usage.record({ ...call, promptTokens: 999, completionTokens: 0, at: 3 });
    expect(await store.jobRuns.ofRun(first)).toEqual({ tokens: 60, cost: 0.5 });
    expect(await store.jobRuns.ofJob(id, 2)).toEqual({ tokens: 25, cost: 0.25 });
    expect(await store.jobRuns.finish(first, failed(1_061_000), 2)).toEqual({
      recorded: true,
      jobId: id,
      pausedNow: false,
    });
    // A second end of the same run (a replay) changes nothing.
    expect((await store.jobRuns.finish(first, failed(1_062_000), 2)).recorded).toBe(false);
    const [recorded] = (await store.jobRuns.recent([id])).get(id) ?? [];
    expect(recorded).toMatchObject({
      outcome: "failed",
      promptTokens: 50,
      completionTokens: 10,
      cost: 0.5,
      toolCalls: 2,
      reason: "model said no",
      finishedAt: 1_061_000,
    });

    const ok = await fire(1_120_000);
    await store.jobRuns.finish(ok, { outcome: "ok", toolCalls: 0, delivered: "done", at: 1_121_000 }, 2);
    expect((await store.jobs.get(id))?.failures).toBe(0);
    expect((await store.jobRuns.finish(await fire(1_180_000), failed(1), 2)).pausedNow).toBe(false);
    const third = await fire(1_240_000);
    expect(await store.jobRuns.finish(third, failed(1_241_000), 2)).toEqual({
      recorded: true,
      jobId: id,
      pausedNow: true,
    });
    expect(await store.jobs.get(id)).toMatchObject({ failures: 2, pausedReason: "failures", pausedAt: 1_241_000 });
    const costs = ((await store.jobRuns.recent([id], 2)).get(id) ?? []).map((r) => [r.outcome, r.cost]);
    expect(costs).toEqual([
      ["failed", undefined],
      ["failed", undefined],
    ]);
    expect((await store.jobRuns.recent([])).size).toBe(0);
  });

  it("/forget takes a person's group reminder from the group's inbox, history and runs, and nobody else's", async () => {
    const { store } = await fresh();
    const group = { channel: "discord" as const, chatId: "G", sessionKey: "discord:G", isGroup: true };
    const bob = await store.people.identify("main", "discord", "77", "Bob");
    await store.people.identify("main", "discord", "88", "Cy");
    const fire = async (userId: string, text: string) => {
      const { id } = await store.jobs.add(job({ message: text, origin: group, owner: { channel: "discord", userId } }));
      const msg = runMessage((await store.jobs.get(id)) as CronJob, 1_060_000, 1_060_000);
      const slot = { jobId: id, scheduledAt: 1_060_000, nextRunAt: null, run: msg };
      expect(await store.jobs.takeSlot(slot)).toEqual({ taken: true, accepted: true });
      await store.conversations.append("discord:G", [{ role: "user", content: msg.text }]);
      return msg;
    };
    const bobs = await fire("77", "water the zebrafinch");
    const cys = await fire("88", "feed the okapiwren");
    // A run cut off before its model call, whose inbox row retention has pruned since: found by its owner alone.
    await store.journal.completeInbound(await fire("77", "prune the quetzalfern"));
    await store.journal.prune(1_000);
    const history = async () => (await store.dashboard.history("discord:G")).map((e) => e.text).join("\n");
    const runs = async () => [...(await store.jobRuns.ofEndedJobs()).values()].flat().map((r) => r.message);
    expect((await runs()).sort()).toEqual(["feed the okapiwren", "prune the quetzalfern", "water the zebrafinch"]);
    await store.forgetting.forget(bob);
    expect(await store.journal.isPending(bobs)).toBe(false);
    expect(await history()).not.toContain("zebrafinch");
    expect(await runs()).toEqual(["feed the okapiwren"]);
    expect(await store.journal.isPending(cys)).toBe(true);
    expect(await history()).toContain("okapiwren");
  });
}
