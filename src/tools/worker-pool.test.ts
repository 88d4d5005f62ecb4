import { expect, it } from "vitest";
import { createWorkerPool } from "./worker-pool.js";

it("gives a task's slot back when its thread cannot start (the module is missing)", async () => {
  const run = createWorkerPool<string, string>(new URL("./no-such-worker.js", import.meta.url), {
    maxThreads: 1,
    idleMs: 1000,
  });
  // A slot kept by the first failure would leave the second waiting for its turn until this signal ends.
  const signal = AbortSignal.timeout(3000);
  for (let i = 0; i < 2; i++) await expect(run("task", signal)).rejects.toThrow(/no-such-worker\.js is missing/);
});
