import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../test/fakes/manual-clock.js";
import { testBus } from "../../test/helpers/bus.js";
import type { InboundMessage } from "../bus/types.js";
import { activeTasks, HEARTBEAT_SESSION, Heartbeat } from "./heartbeat.js";

describe("activeTasks", () => {
  it("finds open list items only", async () => {
    expect(activeTasks("# Heartbeat\n\nTasks to check periodically. Empty for now.\n")).toEqual([]);
    const md = [
      "# Heartbeat",
      "<!-- - commented out -->",
      "- check the disk space",
      "* [ ] look at the backup log",
      "- [x] done already",
      "- [ ]",
      "1. water reminder on Fridays",
      "not a task",
    ].join("\n");
    expect(activeTasks(md)).toEqual(["check the disk space", "look at the backup log", "water reminder on Fridays"]);
  });
});

describe("Heartbeat", () => {
  let clock: ManualClock | undefined;
  afterEach(() => clock?.dispose());

  function setup(file: string | undefined) {
    clock = new ManualClock("2026-01-01T00:00:00Z");
    const bus = testBus();
    const published: InboundMessage[] = [];
    const pending = new Set<string>();
    const heartbeat = new Heartbeat({
      bus,
      inbox: { isPending: async (msg) => pending.has(msg.id) },
      readFile: () => file,
      target: "telegram:42",
      sessionKey: HEARTBEAT_SESSION,
      intervalMs: 60_000,
      log: pino({ level: "silent" }),
    });
    const original = bus.publishInbound.bind(bus);
    bus.publishInbound = (msg) => {
      published.push(msg);
      pending.add(msg.id);
      return original(msg);
    };
    return { clock: clock as ManualClock, heartbeat, published, pending };
  }

  it("queues a turn each interval while HEARTBEAT.md has tasks, skipping while the last one still runs", async () => {
    const { clock, heartbeat, published, pending } = setup("- check the disk\n");
    heartbeat.start();
    await clock.advance(59_999);
    expect(published).toHaveLength(0);
    await clock.advance(1);
    expect(published).toHaveLength(1);
    expect(published[0]).toMatchObject({
      channel: "system",
      sessionKey: HEARTBEAT_SESSION,
      run: { kind: "heartbeat", deliverTo: "telegram:42", silentReply: "HEARTBEAT_OK" },
    });
    expect(published[0].text).toContain("- check the disk");
    await clock.advance(60_000);
    expect(published).toHaveLength(1);
    pending.clear();
    await clock.advance(60_000);
    expect(published).toHaveLength(2);
    heartbeat.stop();
    expect(clock.nextTimerAt).toBeUndefined();
  });

  it("does nothing without tasks or without the file", async () => {
    for (const file of [undefined, "# Heartbeat\n\nNothing yet.\n"]) {
      const { clock, heartbeat, published } = setup(file);
      heartbeat.start();
      await clock.advance(10 * 60_000);
      expect(published).toHaveLength(0);
      heartbeat.stop();
    }
  });
});
