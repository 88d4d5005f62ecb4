/** web_search against a fake search API on 127.0.0.1 speaking Brave's and SearXNG's JSON. */
import { pino } from "pino";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ToolRegistry } from "../src/tools/registry.js";
import type { ToolContext } from "../src/tools/tool.js";
import { createWebSearchTool, type SearchSettings } from "../src/tools/web/web-search-tool.js";
import { type FakeSearch, startFakeSearch } from "./fakes/search-server.js";
import { type FakeWeb, startFakeWeb } from "./fakes/web-server.js";
import { testBus } from "./helpers/bus.js";

const KEY = "brave-test-key";
let fake: FakeSearch;

beforeAll(async () => {
  fake = await startFakeSearch({ apiKey: KEY });
});
afterAll(() => fake.close());
beforeEach(() => {
  fake.status = undefined;
  fake.requests.length = 0;
  fake.results = [
    {
      title: "Bakery <strong>hours</strong>",
      url: "https://bakery.example/hours",
      snippet: "Open at <strong>7:00</strong> &amp; late",
    },
    { title: "Bakery map", url: "https://bakery.example/map", snippet: "Find us" },
    { title: "Other", url: "https://other.example/", snippet: "" },
  ];
});

function search(settings: Partial<SearchSettings>) {
  const tool = createWebSearchTool({ provider: "brave", baseUrl: fake.url, timeoutSeconds: 2, ...settings });
  const registry = new ToolRegistry(60).register(tool);
  const ctx = { signal: new AbortController().signal, log: pino({ level: "silent" }), bus: testBus() };
  return (args: Record<string, unknown>) =>
    registry.execute("web_search", JSON.stringify(args), ctx as unknown as ToolContext);
}

describe("web_search", () => {
  it("asks Brave with the key and lists title, URL and plain-text snippet", async () => {
    const result = await search({ apiKey: KEY })({ query: "bakery opening hours", count: 2 });
    expect(fake.requests[0].url).toBe("/res/v1/web/search?q=bakery+opening+hours&count=2");
    expect(fake.requests[0].headers["x-subscription-token"]).toBe(KEY);
    expect(result).toMatch(/^\[web_search: external, untrusted content\./);
    expect(result).toContain("provider: Brave Search\nquery: bakery opening hours\nresults: 2\n");
    expect(result).toContain(
      "1. Bakery hours\n   https://bakery.example/hours\n   Open at 7:00 & late\n\n2. Bakery map\n   https://bakery.example/map\n   Find us\n<<<END",
    );
  });

  it("asks SearXNG for JSON and keeps `count` results", async () => {
    const result = await search({ provider: "searxng" })({ query: "bakery" });
    expect(fake.requests[0].url).toBe("/search?q=bakery&format=json");
    expect(result).toContain("provider: SearXNG\nquery: bakery\nresults: 3\n");
    expect(await search({ provider: "searxng" })({ query: "bakery", count: 1 })).toContain("results: 1\n");
    fake.results = [];
    expect(await search({ provider: "searxng" })({ query: "nothing" })).toContain("\nNo results.\n");
  });

  it("explains refusals, rate limits, failures and bad arguments", async () => {
    expect(await search({ apiKey: "wrong" })({ query: "x" })).toBe(
      "Error: Brave Search refused the request (HTTP 401): check BRAVE_API_KEY.",
    );
    fake.status = 429;
    expect(await search({ apiKey: KEY })({ query: "x" })).toBe(
      "Error: Brave Search says too many requests (HTTP 429); try again later.",
    );
    fake.status = 403;
    expect(await search({ provider: "searxng" })({ query: "x" })).toBe(
      'Error: SearXNG refused the request (HTTP 403): the instance must list "json" under search.formats in its settings.yml.',
    );
    fake.status = 502;
    expect(await search({ provider: "searxng" })({ query: "x" })).toBe("Error: SearXNG answered HTTP 502.");
    expect(await search({})({ query: "" })).toBe(
      "Error: invalid arguments for web_search: query must NOT have fewer than 1 characters.",
    );
    expect(await search({})({ query: "x", count: 50 })).toBe(
      "Error: invalid arguments for web_search: count must be <= 10.",
    );
    expect(await search({})({ query: "   " })).toBe("Error: query is empty.");
  });

  it("gives up on a provider that is down, silent, garbled or huge", async () => {
    const down = await startFakeWeb(() => {});
    const port = down.port;
    await down.close();
    expect(await search({ baseUrl: `http://127.0.0.1:${port}` })({ query: "x" })).toMatch(
      /^Error: Brave Search could not be reached: .*ECONNREFUSED/,
    );
    const odd: FakeWeb[] = [];
    try {
      const silent = await startFakeWeb(() => {});
      const garbled = await startFakeWeb((_req, res) => res.end("<html>not json</html>"));
      const huge = await startFakeWeb((_req, res) => res.end(`{"results": ["${"x".repeat(3 * 1024 * 1024)}"]}`));
      odd.push(silent, garbled, huge);
      expect(await search({ baseUrl: silent.url, timeoutSeconds: 0.3 })({ query: "x" })).toBe(
        "Error: Brave Search did not answer within 0.3 s.",
      );
      expect(await search({ baseUrl: garbled.url })({ query: "x" })).toBe(
        "Error: Brave Search answered with something that is not JSON.",
      );
      expect(await search({ baseUrl: huge.url })({ query: "x" })).toBe(
        "Error: Brave Search sent more than 2097152 bytes.",
      );
    } finally {
      await Promise.all(odd.map((s) => s.close()));
    }
  });
});
