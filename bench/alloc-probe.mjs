// Preloaded (`node --import`) by bench/alloc-profile.ts: on "alloc-start" over the IPC channel it
// starts V8's sampling heap profiler with collected objects included (so garbage counts too; with "promoted", only
// what a scavenge did not collect), on
// "alloc-stop FILE" it writes the profile there. Answers each with a message when done.
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector";

const session = new Session();
session.connect();
const post = (method, params) =>
  new Promise((resolve, reject) =>
    session.post(method, params, (err, result) => (err ? reject(err) : resolve(result))),
  );

if (process.channel) {
  process.on("message", async (message) => {
    if (message === "alloc-start" || message === "alloc-start promoted") {
      await post("HeapProfiler.enable");
      await post("HeapProfiler.startSampling", {
        samplingInterval: 16384,
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: message === "alloc-start",
      });
      process.send?.("started");
    } else if (typeof message === "string" && message.startsWith("alloc-stop ")) {
      const { profile } = await post("HeapProfiler.stopSampling");
      writeFileSync(message.slice("alloc-stop ".length), JSON.stringify(profile));
      process.send?.("stopped");
    }
  });
  process.channel.unref();
}
