import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../src/config/config.js";
import { checkMcpServers } from "../src/tools/mcp/check.js";
import { tempHome } from "./helpers/app.js";
import { killHard, pincer, startDaemon, stopDaemon } from "./helpers/daemon.js";
import { alive, EVERYTHING, HOSTILE, writeMcpConfig } from "./helpers/mcp.js";
import { until } from "./helpers/until.js";

describe("pincer doctor and pincer status with MCP servers", () => {
  it("doctor connects to each server once and reports its tools, or why not", async () => {
    const home = tempHome("pincer-mcp-doctor-");
    writeMcpConfig(home, {
      everything: { command: process.execPath, args: [EVERYTHING, "stdio"] },
      ghost: { command: "/nonexistent/mcp-server" },
      many: { command: process.execPath, args: [HOSTILE, "tools=100"] },
    });
    const config = loadConfig({ PINCER_HOME: home, PINCER_TIMEZONE: "UTC" }, { requireApiKey: false });
    const checks = await checkMcpServers(config, 5000);
    const by = Object.fromEntries(checks.map((c) => [c.name, c]));
    expect(by.everything).toMatchObject({ ok: true, warned: false });
    expect(by.everything.detail).toMatch(/^everything \(stdio\): connected, \d+ tools$/);
    expect(by.ghost.ok).toBe(false);
    expect(by.ghost.detail).toMatch(/^ghost \(stdio\): unavailable \(.*ENOENT.*\)$/);
    expect(by.many).toMatchObject({ ok: true, warned: true });
    expect(by.many.detail).toMatch(/connected, 64 tools; it offers 107 tools; only the first 64/);
  });

  it("status lists the configured servers with the state the running daemon wrote", async () => {
    const home = tempHome("pincer-mcp-status-");
    writeMcpConfig(home, { everything: { command: process.execPath, args: [EVERYTHING, "stdio"] } });
    const env = { PINCER_TIMEZONE: "UTC", LOG_LEVEL: "silent" };
    const gateway = startDaemon(home, {
      ...env,
      OPENAI_API_KEY: "k",
      OPENAI_BASE_URL: "http://127.0.0.1:9/v1",
      PINCER_SANDBOX: "none",
    });
    try {
      const statusFile = join(home, "mcp-status.json");
      await until(() => existsSync(statusFile) && readFileSync(statusFile, "utf8").includes('"connected"'), "connect");
      const { code, stdout } = await pincer(["status"], home, env);
      expect(code).toBe(0);
      expect(stdout).toMatch(/mcp servers: {3}1 configured, as pincer saw them at \d{4}-/);
      expect(stdout).toMatch(/ {2}everything \(stdio\): connected, \d+ tools/);
      const pid = JSON.parse(readFileSync(statusFile, "utf8")).servers[0].pid as number;
      await stopDaemon(gateway);
      // The daemon's shutdown took its server along.
      await until(() => !alive(pid), "the server to end with the daemon", 10_000);
    } finally {
      await killHard(gateway);
    }
  });
});
