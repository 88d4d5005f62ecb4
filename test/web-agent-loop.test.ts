/**
 * web_search and web_fetch through the agent loop: the real model client against the scripted
 * OpenAI-compatible server, the tools as createTools registers them from the configuration,
 * a fake Brave API and web servers on 127.0.0.1.
 */
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runAgentLoop } from "../src/agent/loop.js";
import { loadConfig } from "../src/config/config.js";
import { createOpenAIModel } from "../src/llm/model.js";
import { databasePath } from "../src/paths.js";
import { openSqliteStore, type SqliteStore } from "../src/store/sqlite/sqlite-store.js";
import { createTools } from "../src/tools/index.js";
import { ToolRegistry } from "../src/tools/registry.js";
import { type FakeOpenAI, startFakeOpenAI } from "./fakes/openai-server.js";
import { type FakeSearch, startFakeSearch } from "./fakes/search-server.js";
import { type FakeWeb, startFakeWeb } from "./fakes/web-server.js";
import { tempHome } from "./helpers/app.js";
import { toolContext } from "./helpers/tools.js";

const log = pino({ level: "silent" });
let root: string;
let store: SqliteStore;
let model: FakeOpenAI;
let search: FakeSearch;
let site: FakeWeb;
let victim: FakeWeb;
// Pages being answered at once: each waits (up to 3 s) for a second request before it answers, so
// calls run one after another would peak at 1 however fast or slow the machine is.
let inFlight = 0;
let peakInFlight = 0;

beforeAll(async () => {
  root = tempHome("pincer-web-loop-");
  store = openSqliteStore(databasePath(root));
  model = await startFakeOpenAI();
  search = await startFakeSearch({ apiKey: "brave-key" });
  site = await startFakeWeb(async (req, res) => {
    inFlight++;
    peakInFlight = Math.max(peakInFlight, inFlight);
    const deadline = Date.now() + 3000;
    while (peakInFlight < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    inFlight--;
    res.writeHead(200, { "content-type": "text/html" });
    res.end(
      `<html><head><title>Page ${req.url}</title></head><body><article><p>${`Contents of ${req.url}. `.repeat(30)}</p></article></body></html>`,
    );
  });
  victim = await startFakeWeb((_req, res) => res.end("router admin"), { host: "::1" });
});

afterAll(async () => {
  await store.close();
  await Promise.all([model.close(), search.close(), site.close(), victim.close()]);
  rmSync(root, { recursive: true, force: true });
});

function registryFor(web: unknown, env: Record<string, string> = {}): ToolRegistry {
  const file = join(root, `config-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify({ web }));
  const config = loadConfig({
    OPENAI_API_KEY: "test",
    OPENAI_BASE_URL: model.url,
    PINCER_HOME: root,
    PINCER_TIMEZONE: "UTC",
    PINCER_CONFIG: file,
    ...env,
  });
  const registry = new ToolRegistry();
  for (const tool of createTools({ config, store })) registry.register(tool);
  return registry;
}

const context = () => toolContext("web", root);

describe("web tools through the agent loop", () => {
  it("searches, fetches two pages at once and refuses the local network", async () => {
    search.results = [{ title: "Site", url: `${site.url}/a`, snippet: "the page" }];
    const registry = registryFor(
      { allow: ["127.0.0.1"], search: { baseUrl: search.url } },
      { BRAVE_API_KEY: "brave-key" },
    );
    expect(registry.isReadOnly("web_fetch") && registry.isReadOnly("web_search")).toBe(true);
    model.requests.length = 0;
    model.enqueue(
      {
        toolCalls: [
          { name: "web_search", arguments: { query: "site pages", count: 3 } },
          { name: "web_fetch", arguments: { url: `${site.url}/a` } },
          { name: "web_fetch", arguments: { url: `${site.url}/b`, max_chars: 200 } },
          { name: "web_fetch", arguments: { url: `http://[::1]:${victim.port}/` } },
        ],
      },
      { content: "Here is what I found." },
    );
    const client = createOpenAIModel({
      apiKey: "test",
      baseUrl: model.url,
      model: "m",
      timeoutSeconds: 10,
      retries: 0,
      stream: false,
    });
    const result = await runAgentLoop(
      { model: client, registry, maxIterations: 5, log },
      { system: "s", history: [], user: { role: "user", content: "go" }, toolContext: context() },
    );

    expect(result.reply).toBe("Here is what I found.");
    const offered = (model.requests[0].tools ?? []).map((t) => t.function.name);
    expect(offered).toEqual(expect.arrayContaining(["web_fetch", "web_search"]));
    const results = model.requests[1].messages.filter((m) => m.role === "tool").map((m) => String(m.content));
    expect(results[0]).toContain(`1. Site\n   ${site.url}/a\n   the page`);
    expect(results[1]).toContain("title: Page /a");
    expect(results[1]).toContain("Contents of /a.");
    expect(results[2]).toContain("note: cut to 200 of");
    expect(results[3]).toBe(`Error: [::1]:${victim.port} is not reachable: ::1 is a loopback address`);
    // Read-only calls share a batch: the second page was requested before the first answered.
    expect(peakInFlight).toBe(2);
    expect(victim.connections).toBe(0);
  });

  it("does not offer web_search without a provider, and still offers web_fetch", async () => {
    const names = registryFor({}).names;
    expect(names).toContain("web_fetch");
    expect(names).not.toContain("web_search");
  });
});
