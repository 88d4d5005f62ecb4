import { type Tool, ToolError } from "../tool.js";
import { SearchError, type SearchProvider } from "./search-providers.js";
import { wrapUntrusted } from "./untrusted.js";

type Args = { query: string; count?: number };

const DEFAULT_COUNT = 5;
const MAX_COUNT = 10;

/** web_search: titles, URLs and snippets from the configured provider (registered only when one is). */
export function createWebSearchTool(provider: SearchProvider, timeoutMs: number): Tool<Args> {
  return {
    name: "web_search",
    description: `Search the web (${provider.label}). Returns title, URL and snippet per result; use web_fetch to read a page.`,
    parameters: {
      type: "object",
      properties: {
        query: { type: "string", minLength: 1, maxLength: 400, description: "What to search for." },
        count: {
          type: "integer",
          minimum: 1,
          maximum: MAX_COUNT,
          description: `How many results (default ${DEFAULT_COUNT}).`,
        },
      },
      required: ["query"],
      additionalProperties: false,
    },
    readOnly: true,
    timeoutSeconds: Math.ceil(timeoutMs / 1000) + 5,
    async execute(args, ctx) {
      const query = args.query.trim();
      if (!query) throw new ToolError("query is empty.");
      const count = args.count ?? DEFAULT_COUNT;
      let results: Awaited<ReturnType<SearchProvider["search"]>>;
      try {
        results = await provider.search(query, count, ctx.signal);
      } catch (err) {
        if (err instanceof SearchError) throw new ToolError(err.message);
        throw err;
      }
      const body =
        results.length === 0
          ? "No results."
          : results.map((r, i) => `${i + 1}. ${r.title}\n   ${r.url}\n   ${r.snippet}`.trimEnd()).join("\n\n");
      return wrapUntrusted("web_search", { provider: provider.label, query, results: results.length }, body);
    },
  };
}
