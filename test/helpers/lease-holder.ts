/**
 * A process that wants one role and, once it has it, writes a row every 50 ms fenced with the
 * epoch it got, never checking again whether it still holds the role: the "write already on its
 * way" of a process that was paused. Prints one line per event for the test to read.
 *   node --import tsx test/helpers/lease-holder.ts URL ROLE TTL_MS NAME
 */
import { hostname } from "node:os";
import { leaseTiming } from "../../src/cluster/lease-policy.js";
import { ClusterMember } from "../../src/cluster/member.js";
import { RoleKeeper } from "../../src/cluster/roles.js";
import { type Fence, FencedOutError } from "../../src/store/cluster.js";
import { openClusterStore } from "../../src/store/postgres/cluster-store.js";
import { createPool, pgSql } from "../../src/store/postgres/db.js";

const [url, role, ttl, name] = process.argv.slice(2);
const say = (line: string): void => {
  process.stdout.write(`${name} ${line}\n`);
};
const log = { info: () => {}, warn: () => {}, error: (o: object) => say(`error ${JSON.stringify(o)}`) };
const store = await openClusterStore(url, { queryTimeoutMs: 1000 });
const writes = createPool(url, () => {}, { query_timeout: 1000 });
const member = new ClusterMember({
  store,
  process: { id: `${name}-${process.pid}`, host: hostname(), pid: process.pid },
  timing: leaseTiming(Number(ttl)),
  log,
});
let writing: Fence | undefined;
const keeper = new RoleKeeper({ member, log });
keeper.add({
  name: role,
  start: async (fence) => {
    writing = fence;
    say(`start ${fence.epoch}`);
  },
  stop: async () => say("stop"),
});
member.start();
setInterval(() => {
  const fence = writing;
  if (!fence) return;
  pgSql(writes, fence)
    .run("INSERT INTO fenced_writes (writer, epoch) VALUES ($1, $2)", [name, fence.epoch])
    .then(
      () => {},
      (err: unknown) => {
        if (err instanceof FencedOutError) {
          say(`fenced out ${fence.epoch}`);
          writing = undefined;
        }
      },
    );
}, 50);
process.on("SIGTERM", async () => {
  await keeper.stop();
  await member.stop();
  await store.close();
  await writes.end();
  say("left");
  process.exit(0);
});
say("ready");
