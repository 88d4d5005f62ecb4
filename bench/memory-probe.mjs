// Preloaded (`node --import`) into every bot the soak compares, pincer and the bare bot alike: on
// the message "memory" over the IPC channel it answers with process.memoryUsage() and the size of
// each V8 heap space, so the bench sees the split (heap, external, array buffers, new and old
// space) and not only the kernel's RSS. The channel is unref'd, so it keeps no process alive and
// changes nothing in how a bot runs or stops.
import { getHeapSpaceStatistics } from "node:v8";

if (process.channel) {
  process.on("message", (message) => {
    if (message !== "memory") return;
    const spaces = Object.fromEntries(getHeapSpaceStatistics().map((s) => [s.space_name, s.space_size]));
    process.send?.({ ...process.memoryUsage(), spaces });
  });
  process.channel.unref();
}
