import { type FakeWeb, startFakeWeb } from "./web-server.js";

type SearchResult = { title: string; url: string; snippet: string };

export interface FakeSearch extends FakeWeb {
  /** The results the next searches answer with. */
  results: SearchResult[];
  /** An HTTP status to answer with instead (401, 429, 500…). */
  status?: number;
}

/**
 * A search API on 127.0.0.1 speaking both shapes web_search reads: Brave's
 * GET /res/v1/web/search (X-Subscription-Token, {web: {results: [{title, url, description}]}})
 * and SearXNG's GET /search?format=json ({results: [{title, url, content}]}).
 */
export async function startFakeSearch(options: { apiKey?: string } = {}): Promise<FakeSearch> {
  const state = { results: [] as SearchResult[], status: undefined as number | undefined };
  const web = await startFakeWeb((req, res) => {
    const url = new URL(req.url ?? "/", "http://fake");
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(body));
    };
    if (fake.status) return send(fake.status, { error: "scripted failure" });
    const count = Number(url.searchParams.get("count") ?? 20);
    if (url.pathname === "/res/v1/web/search") {
      if (options.apiKey && req.headers["x-subscription-token"] !== options.apiKey) {
        return send(401, { type: "ErrorResponse", error: { code: "SUBSCRIPTION_TOKEN_INVALID" } });
      }
      return send(200, {
        type: "search",
        query: { original: url.searchParams.get("q") },
        web: {
          type: "search",
          results: fake.results.slice(0, count).map((r) => ({
            type: "search_result",
            title: r.title,
            url: r.url,
            description: r.snippet,
          })),
        },
      });
    }
    if (url.pathname === "/search") {
      if (url.searchParams.get("format") !== "json") return send(403, "format not allowed");
      return send(200, {
        query: url.searchParams.get("q"),
        number_of_results: fake.results.length,
        results: fake.results.map((r) => ({ title: r.title, url: r.url, content: r.snippet, engine: "fake" })),
      });
    }
    send(404, { error: "no route" });
  });
  const fake: FakeSearch = Object.assign(web, state);
  return fake;
}
