/**
 * The live heap of a child started with `--heapsnapshot-signal=SIGUSR2`: V8 collects garbage
 * before it writes a snapshot, so the sum of the snapshot's objects is what the process really
 * holds, whatever its RSS says about garbage not yet collected.
 */
import { readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { Bot } from "./processes.js";

export const HEAP_SNAPSHOT_OPTIONS = "--heapsnapshot-signal=SIGUSR2";

interface Snapshot {
  snapshot: { meta: { node_fields: string[] } };
  nodes: number[];
}

export async function liveHeapMB(bot: Bot): Promise<number> {
  const cwd = `/proc/${bot.child.pid}/cwd`;
  const before = new Set(readdirSync(cwd));
  bot.child.kill("SIGUSR2");
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    const file = readdirSync(cwd).find((name) => name.endsWith(".heapsnapshot") && !before.has(name));
    if (!file) continue;
    let snapshot: Snapshot;
    try {
      // Written as it is taken: not parseable until it is whole.
      snapshot = JSON.parse(readFileSync(join(cwd, file), "utf8")) as Snapshot;
    } catch {
      continue;
    }
    rmSync(join(cwd, file));
    const fields = snapshot.snapshot.meta.node_fields;
    const self = fields.indexOf("self_size");
    let total = 0;
    for (let i = self; i < snapshot.nodes.length; i += fields.length) total += snapshot.nodes[i];
    return total / 1024 / 1024;
  }
  throw new Error(`no heap snapshot from ${bot.kind} within 2 minutes`);
}
