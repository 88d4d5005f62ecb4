// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${VAR} is the config file's own syntax, meant literally.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "./config.js";

function load(mcp: unknown, env: Record<string, string> = {}) {
  const home = mkdtempSync(join(tmpdir(), "pincer-mcp-config-"));
  writeFileSync(join(home, "config.json"), JSON.stringify({ mcp }));
  return loadConfig({ OPENAI_API_KEY: "k", PINCER_HOME: home, PINCER_TIMEZONE: "UTC", ...env });
}

describe("mcp settings", () => {
  it("fills defaults, takes ${VAR} from the environment and resolves cwd from the config's folder", () => {
    const config = load(
      {
        servers: {
          files: { command: "npx", args: ["-y", "some-server"], env: { TOKEN: "${GH_TOKEN}" }, cwd: "servers" },
          wiki: { url: "https://wiki.example/mcp", headers: { Authorization: "Bearer ${WIKI}" } },
        },
      },
      { GH_TOKEN: "gh-1", WIKI: "w-2" },
    );
    expect(config.mcp.servers.files).toMatchObject({
      env: { TOKEN: "gh-1" },
      toolTimeoutSeconds: 60,
      trusted: false,
      cwd: join(config.home, "servers"),
    });
    expect(config.mcp.servers.wiki.headers).toEqual({ Authorization: "Bearer w-2" });
    expect(config.mcp.servers.wiki.args).toEqual([]);
  });

  it("stops the start with one sentence naming the setting", () => {
    const cases: Array<[unknown, RegExp]> = [
      [{ servers: { a: { args: [] } } }, /mcp\.servers\.a needs either "command" .* or "url" .*, not neither/],
      [{ servers: { a: { command: "x", url: "http://h/mcp" } } }, /not both/],
      [{ servers: { a: { url: "ftp://h/mcp" } } }, /mcp\.servers\.a\.url must be an http\(s\) URL/],
      [
        { servers: { a: { command: "x", env: { T: "${NOPE}" } } } },
        /mcp\.servers\.a\.env\.T uses \$\{NOPE\}, which is not set/,
      ],
      [{ servers: { "a.b": { command: "x" }, a_b: { command: "y" } } }, /"a\.b" and "a_b" give the same tool names/],
      [{ servers: { a: { command: "x", toolTimeoutSeconds: 0 } } }, /mcp\.servers\.a\.toolTimeoutSeconds must be >= 1/],
      [{ servers: { a: { command: "x", trusted: "yes" } } }, /mcp\.servers\.a\.trusted must be boolean/],
      [{ servers: { a: { command: "x", cmd: "y" } } }, /must NOT have additional properties "cmd"/],
    ];
    for (const [mcp, message] of cases) {
      expect(() => load(mcp)).toThrow(ConfigError);
      expect(() => load(mcp)).toThrow(message);
    }
  });
});
