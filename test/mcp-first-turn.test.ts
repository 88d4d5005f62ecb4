/**
 * MCP tools are there from the first turn after a start: a turn waits (bounded by the connect
 * timeout) for each configured server's first connection attempt. The reference server from the
 * npm registry over stdio, the real openai client against the scripted model.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { App } from "../src/app.js";
import { recordingChannel, tempHome, testApp, userMessage } from "./helpers/app.js";
import { EVERYTHING, FAST_MCP, writeMcpConfig } from "./helpers/mcp.js";
import { fakeModelForFile } from "./helpers/model.js";
import { until } from "./helpers/until.js";

const fake = fakeModelForFile();
const apps: App[] = [];
afterEach(async () => {
  for (const app of apps.splice(0)) await app.stop();
});

/** A first start of server-everything on a busy machine can take seconds: the wait's bound is generous here. */
async function started(home: string, connectTimeoutMs = 30_000) {
  const app = await testApp(fake.url, home, {}, undefined, undefined, { mcpTiming: { ...FAST_MCP, connectTimeoutMs } });
  apps.push(app);
  const channel = recordingChannel(app);
  await app.start([channel]);
  return { app, channel };
}

const offered = (i: number) => (fake.requests[i]?.tools ?? []).map((t) => t.function.name);
const EVERYTHING_SERVER = { command: process.execPath, args: [EVERYTHING, "stdio"] };

describe("MCP ready before the first turn", () => {
  it("a message sent right after the start is answered with the MCP tools offered", async () => {
    const home = tempHome("pincer-mcp-first-");
    writeMcpConfig(home, { everything: EVERYTHING_SERVER });
    const { app, channel } = await started(home);
    await app.bus.publishInbound(userMessage("first", "hello"));
    await channel.waitFor(1);
    expect(offered(0)).toEqual(expect.arrayContaining(["exec", "mcp_everything_echo", "mcp_everything_get-sum"]));
  });

  it("a message waiting from before a restart is answered with them too", async () => {
    const home = tempHome("pincer-mcp-restart-");
    const first = await started(home);
    fake.enqueue({ content: "never sent", delayMs: 5000 });
    await first.app.bus.publishInbound(userMessage("again", "cut short by a restart"));
    await until(() => fake.requests.length === 1, "the first model call");
    await first.app.stop();

    writeMcpConfig(home, { everything: EVERYTHING_SERVER });
    const second = await started(home);
    await second.channel.waitFor(1);
    expect(second.channel.sent[0].text).toBe("ok");
    expect(JSON.stringify(fake.requests[1].messages)).toContain("cut short by a restart");
    expect(offered(1)).toContain("mcp_everything_echo");
  });

  it("a server that never answers holds the first turn only until its connect timeout, and /stop ends the wait", async () => {
    const home = tempHome("pincer-mcp-silent-");
    // A process that speaks no MCP at all: the connection attempt times out (3 s here).
    writeMcpConfig(home, { silent: { command: process.execPath, args: ["-e", "setInterval(() => {}, 1000)"] } });
    const { app, channel } = await started(home, 3000);
    await app.bus.publishInbound(userMessage("silent", "first"));
    await until(() => app.worker.lanes.runningSessions.includes("console:silent"), "the turn to start waiting");
    await app.bus.publishInbound(userMessage("silent", "/stop"));
    await channel.waitFor(2);
    expect(channel.sent.map((m) => m.text)).toEqual([expect.stringMatching(/^Stopp/), "Stopped."]);
    expect(fake.requests).toHaveLength(0);

    await app.bus.publishInbound(userMessage("silent", "second"));
    await channel.waitFor(3);
    expect(channel.sent[2].text).toBe("ok");
    expect(app.mcp.status()[0].state).not.toBe("connected");
    expect(offered(0).some((name) => name.startsWith("mcp_"))).toBe(false);
  });
});
