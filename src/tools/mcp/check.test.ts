import { rmSync, writeFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { tempHome } from "../../../test/helpers/app.js";
import { writeMcpConfig } from "../../../test/helpers/mcp.js";
import { loadConfig } from "../../config/config.js";
import { lastKnownMcpStatus, mcpStatusPath } from "./check.js";

describe("lastKnownMcpStatus (pincer status)", () => {
  const homes: string[] = [];
  const statusWith = (saved: string) => {
    const home = tempHome("pincer-mcp-status-file-");
    homes.push(home);
    writeMcpConfig(home, { files: { command: "mcp-files" } });
    const config = loadConfig({ PINCER_HOME: home, PINCER_TIMEZONE: "UTC" }, { requireApiKey: false });
    writeFileSync(mcpStatusPath(config), saved);
    return lastKnownMcpStatus(config);
  };
  afterEach(() => {
    for (const home of homes.splice(0)) rmSync(home, { recursive: true, force: true });
  });

  it("shows what the daemon saw", () => {
    const saved = {
      updatedAt: "2026-01-01T00:00:00Z",
      servers: [{ name: "files", transport: "stdio", state: "connected", tools: 2, trusted: false, warnings: [] }],
    };
    expect(statusWith(JSON.stringify(saved))).toEqual([
      "mcp servers:   1 configured, as pincer saw them at 2026-01-01T00:00:00Z",
      "  files (stdio): connected, 2 tools",
    ]);
  });

  it("reads an entry without warnings (an older daemon's file)", () => {
    const saved = { updatedAt: "x", servers: [{ name: "files", transport: "http", state: "connected", tools: 1 }] };
    expect(statusWith(JSON.stringify(saved))[1]).toBe("  files (http): connected, 1 tool");
  });

  it.each(["{}", '{"updatedAt":"x","servers":{}}', "[]", '"text"', "42", "null", "{torn"])(
    "shows only the configured names when the file holds %s",
    (saved) => {
      expect(statusWith(saved)).toEqual(["mcp servers:   1 configured", "  files: not started yet"]);
    },
  );
});
