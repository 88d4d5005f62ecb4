import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { chainOf } from "../llm/configured.js";
import { ConfigError, loadConfig } from "./config.js";

const home = mkdtempSync(join(tmpdir(), "pincer-agents-"));
const TG = "123456789:AAHfakefakefakefakefakefakefakefake";
const TG_SHOP = "987654321:AAHshopshopshopshopshopshopshopshop";
const base = { OPENAI_API_KEY: "main-key", PINCER_HOME: home, PINCER_TIMEZONE: "UTC" };

function withFile(file: unknown, env: Record<string, string> = {}, requireApiKey = true) {
  const path = join(home, `config-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(path, JSON.stringify(file));
  return loadConfig({ ...base, PINCER_CONFIG: path, ...env }, { requireApiKey });
}

function problemOf(file: unknown, env: Record<string, string> = {}): string {
  try {
    withFile(file, env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    const text = (err as Error).message;
    expect(text.split("\n")).toHaveLength(1);
    return text;
  }
  throw new Error("expected a ConfigError");
}

const twoAgents = {
  agent: { maxIterations: 9, disabledTools: ["exec"] },
  agents: {
    shop: {
      model: { name: "shop-model", baseUrl: "http://127.0.0.1:9/v1", apiKeyEnv: "SHOP_KEY" },
      agent: { disabledTools: ["web_fetch"], models: [{ name: "big", apiKeyEnv: "BIG_KEY" }] },
      memory: { promptChars: 10 },
    },
  },
  accounts: { telegram: { shop: { tokenEnv: "TG_SHOP", agent: "shop", allowFrom: ["5"] } } },
  bindings: [{ agent: "shop", channel: "discord", guild: "G1" }],
};
const twoAgentsEnv = { SHOP_KEY: "shop-key", BIG_KEY: "big-key", TG_SHOP, TELEGRAM_BOT_TOKEN: TG };

describe("agents, accounts and bindings in the config file", () => {
  it("without agents, today's settings are the agent main and nothing else is", () => {
    const config = loadConfig(base);
    expect(Object.keys(config.agents)).toEqual(["main"]);
    expect(config.agents.main.workspace).toBe(join(home, "workspace"));
    expect(config.agents.main.openai).toEqual(config.openai);
    expect(config.accounts).toEqual([]);
    expect(config.secrets).toEqual([]);
  });

  it("merges each agent's sections over the top-level ones, with its own endpoint, key and workspace", () => {
    const config = withFile(twoAgents, twoAgentsEnv);
    const shop = { ...config, ...config.agents.shop };
    expect(config.agent.disabledTools).toEqual(["exec"]);
    expect(shop.agent.disabledTools).toEqual(["web_fetch"]);
    // A key it does not name stays the top level's; one it does not name at all gets the default.
    expect(shop.agent.maxIterations).toBe(9);
    expect(shop.memory.promptChars).toBe(10);
    expect(shop.memory.consolidate).toBe(true);
    expect(shop.workspace).toBe(join(home, "agents", "shop", "workspace"));
    expect(shop.openai).toEqual({
      apiKey: "shop-key",
      baseUrl: "http://127.0.0.1:9/v1",
      model: "shop-model",
      keyEnv: "SHOP_KEY",
    });
    expect(config.openai.apiKey).toBe("main-key");
    // Each endpoint of a chain carries its own key; main's chain never sees the shop's.
    expect(chainOf(shop, "big").map((e) => [e.model, e.apiKey])).toEqual([["big", "big-key"]]);
    expect(chainOf(shop).map((e) => e.apiKey)).toEqual(["shop-key"]);
    expect(JSON.stringify(config.agents.main)).not.toMatch(/shop-key|big-key/);
    expect(config.secrets.sort()).toEqual(["BIG_KEY", "SHOP_KEY", "TG_SHOP"]);
    expect(config.accounts).toEqual([
      { channel: "telegram", token: TG, agent: "main", allowFrom: [] },
      { channel: "telegram", account: "shop", token: TG_SHOP, agent: "shop", allowFrom: ["5"] },
    ]);
  });

  it("checks an agent's override as the top-level section, naming the agent", () => {
    const bad = { agents: { shop: { agent: { maxIterations: "many" } } } };
    expect(problemOf(bad)).toMatch(/: agents\.shop\.agent\.maxIterations must be integer\.$/);
    expect(problemOf({ agents: { shop: { exec: { nettwork: true } } } })).toMatch(
      /agents\.shop\.exec must NOT have additional properties "nettwork"\.$/,
    );
    expect(problemOf({ agents: { "Bad Name": {} } })).toMatch(
      /: agents must match pattern "\^\[a-z0-9\].*" "Bad Name"\.$/,
    );
  });

  it.each([
    [{ bindings: [{ agent: "nobody", channel: "telegram" }] }, /bindings\[0\]\.agent "nobody" is not an agent/],
    [
      { bindings: [{ agent: "main", channel: "discord", account: "ghost" }] },
      /bindings\[0\]\.account "ghost" is not in accounts\.discord/,
    ],
    [
      { accounts: { telegram: { shop: { tokenEnv: "TG_SHOP", agent: "ghost" } } } },
      /accounts\.telegram\.shop\.agent "ghost" is not an agent/,
    ],
    [
      { accounts: { telegram: { shop: { tokenEnv: "UNSET_VAR" } } } },
      /accounts\.telegram\.shop\.tokenEnv UNSET_VAR is not set/,
    ],
    [{ accounts: { telegram: { shop: { tokenEnv: "TELEGRAM_BOT_TOKEN" } } } }, /the same token as TELEGRAM_BOT_TOKEN/],
    [
      { accounts: { telegram: { default: { tokenEnv: "TG_SHOP" } } } },
      /"default" is the account of the TELEGRAM_BOT_TOKEN/,
    ],
    [{ accounts: { telegram: { bad: { tokenEnv: "BAD_TOKEN" } } } }, /^BAD_TOKEN does not look like a bot token/],
    [{ agent: { models: [{ name: "x", apiKeyEnv: "NOPE" }] } }, /agent\.models names apiKeyEnv NOPE, which is not set/],
    [
      { agents: { shop: { model: { name: "m", apiKeyEnv: "NOPE" } } } },
      /agents\.shop\.model names apiKeyEnv NOPE, which is not set/,
    ],
    [{ bindings: [{ agent: "main", channel: "telegram", guild: "1" }] }, /bindings\[0\]\.guild is only for discord/],
  ])("stops on %j with one sentence naming the setting", (file, message) => {
    expect(problemOf(file, { TG_SHOP, TELEGRAM_BOT_TOKEN: TG, BAD_TOKEN: "nope" })).toMatch(message);
  });

  it("leaves an unset key for pincer doctor to name when the command needs no model", () => {
    const config = withFile({ agents: { shop: { model: { name: "m", apiKeyEnv: "NOPE" } } } }, {}, false);
    expect(config.agents.shop.openai).toMatchObject({ apiKey: "", keyEnv: "NOPE" });
  });

  it("does not let an agent's MCP server read another agent's key variable", () => {
    const file = {
      agents: {
        a: { model: { name: "m", apiKeyEnv: "A_KEY" } },
        // biome-ignore lint/suspicious/noTemplateCurlyInString: the config file's ${VAR} syntax, literally.
        b: { mcp: { servers: { s: { command: "x", env: { LEAK: "${A_KEY}" } } } } },
      },
    };
    expect(problemOf(file, { A_KEY: "secret-a" })).toMatch(
      /mcp\.servers\.s\.env\.LEAK uses \$\{A_KEY\}, which is not set/,
    );
    const own = {
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the config file's ${VAR} syntax, literally.
      agents: { a: { ...file.agents.a, mcp: { servers: { s: { command: "x", env: { K: "${A_KEY}" } } } } } },
    };
    expect(withFile(own, { A_KEY: "secret-a" }).agents.a.mcp.servers.s.env).toEqual({ K: "secret-a" });
  });
});
