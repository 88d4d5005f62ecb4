import type { Config } from "../../config/config.js";
import { integerParam, objectSchema, type Tool, ToolError } from "../tool.js";
import { wrapUntrusted } from "./untrusted.js";

type Args = { query: string; count?: number };
/** The configured provider (its base URL is the operator's choice, so it is not SSRF-checked). */
export type SearchSettings = Config["web"]["search"] & { provider: "brave" | "searxng"; baseUrl: string };

const DEFAULT_COUNT = 5;
const MAX_COUNT = 10;
const MAX_RESPONSE_BYTES = 2 * 1024 * 1024;

/** web_search: titles, URLs and snippets from the configured provider (registered only when one is). */
export function createWebSearchTool(settings: SearchSettings): Tool<Args> {
  const brave = settings.provider === "brave";
  const label = brave ? "Brave Search" : "SearXNG";
  const { timeoutSeconds } = settings;

  /** GETs the provider's JSON within the deadline and the size cap; every failure worded for the model. */
  async function getJson(url: URL, signal: AbortSignal): Promise<unknown> {
    const headers = { accept: "application/json", ...(brave && { "x-subscription-token": settings.apiKey ?? "" }) };
    const deadline = AbortSignal.timeout(timeoutSeconds * 1000);
    const chunks: Uint8Array[] = [];
    let response: Response | undefined;
    try {
      response = await fetch(url, { headers, signal: AbortSignal.any([signal, deadline]), redirect: "error" });
      let size = 0;
      for await (const chunk of response.body ?? []) {
        size += chunk.length;
        // Throwing out of the loop cancels the stream, which stops the download.
        if (size > MAX_RESPONSE_BYTES) throw new ToolError(`${label} sent more than ${MAX_RESPONSE_BYTES} bytes.`);
        chunks.push(chunk);
      }
    } catch (err) {
      if (err instanceof ToolError) throw err;
      if (signal.aborted) throw signal.reason;
      if (deadline.aborted) throw new ToolError(`${label} did not answer within ${timeoutSeconds} s.`);
      // fetch's own "fetch failed" says nothing; its cause (a refused connection, a bad address) does.
      const { message } = (response ? err : ((err as Error).cause ?? err)) as Error;
      throw new ToolError(`${label} ${response ? "broke off its answer" : "could not be reached"}: ${message}.`);
    }
    if (response.status === 401 || response.status === 403) {
      const hint = brave
        ? "check BRAVE_API_KEY"
        : 'the instance must list "json" under search.formats in its settings.yml';
      throw new ToolError(`${label} refused the request (HTTP ${response.status}): ${hint}.`);
    }
    if (response.status === 429) throw new ToolError(`${label} says too many requests (HTTP 429); try again later.`);
    if (!response.ok) throw new ToolError(`${label} answered HTTP ${response.status}.`);
    try {
      return JSON.parse(Buffer.concat(chunks).toString("utf8"));
    } catch {
      throw new ToolError(`${label} answered with something that is not JSON.`);
    }
  }

  return {
    name: "web_search",
    description: `Search the web (${label}). Returns title, URL and snippet per result; use web_fetch to read a page.`,
    parameters: objectSchema(["query"], {
      query: { type: "string", minLength: 1, maxLength: 400, description: "What to search for." },
      count: integerParam(1, MAX_COUNT, `How many results (default ${DEFAULT_COUNT}).`),
    }),
    readOnly: true,
    timeoutSeconds: Math.ceil(timeoutSeconds) + 5,
    async execute(args, ctx) {
      const query = args.query.trim();
      if (!query) throw new ToolError("query is empty.");
      const count = args.count ?? DEFAULT_COUNT;
      const url = new URL(`${settings.baseUrl.replace(/\/+$/, "")}${brave ? "/res/v1/web/search" : "/search"}`);
      url.searchParams.set("q", query);
      url.searchParams.set(brave ? "count" : "format", brave ? String(count) : "json");
      const data = (await getJson(url, ctx.signal)) as { web?: { results?: unknown[] }; results?: unknown[] } | null;
      // Snippets arrive with <strong> highlights and entities; the model wants plain text on one line.
      // The HTML parser loads with the first search, not at start.
      const { htmlToPlainText } = await import("./html-to-text.js");
      const plain = (html: unknown) => (typeof html === "string" ? htmlToPlainText(html).replace(/\s+/g, " ") : "");
      const results = ((brave ? data?.web?.results : data?.results) ?? [])
        .flatMap((raw) => {
          const r = (typeof raw === "object" && raw !== null ? raw : {}) as Record<string, unknown>;
          if (typeof r.url !== "string" || r.url === "") return [];
          const title = plain(typeof r.title === "string" ? r.title : r.url);
          return [`${title}\n   ${r.url}\n   ${plain(r[brave ? "description" : "content"])}`];
        })
        .slice(0, count);
      const body =
        results.length === 0 ? "No results." : results.map((r, i) => `${i + 1}. ${r}`.trimEnd()).join("\n\n");
      return wrapUntrusted("web_search", { provider: label, query, results: results.length }, body);
    },
  };
}
