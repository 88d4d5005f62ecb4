import { spaceOwner } from "../access/policy.js";
import { agentOf } from "../bus/types.js";
import { memoryParagraphs, readMemoryFile } from "../memory/memory-file.js";
import type { SearchHit } from "../store/store.js";
import { formatDay } from "../time-zone.js";
import { integerParam, objectSchema, type Tool, type ToolDeps, ToolError } from "./tool.js";

type Args = { query: string; limit?: number };

const DEFAULT_LIMIT = 8;
const MAX_LIMIT = 25;

/** Ranked full-text search (any script) over MEMORY.md where this chat may see it, its summaries and past messages. */
export function createMemorySearchTool({ store, config }: Pick<ToolDeps, "store" | "config">): Tool<Args> {
  return {
    name: "memory_search",
    description:
      "Search long-term memory: MEMORY.md, summaries of earlier turns and past messages of this chat (also from before /new). " +
      "Use it when the user refers to something said before that is not in view. Returns dated snippets, best first.",
    parameters: objectSchema(["query"], {
      query: { type: "string", minLength: 1, maxLength: 500, description: "Words to look for, in any language." },
      limit: integerParam(1, MAX_LIMIT, `Most results (default ${DEFAULT_LIMIT}).`),
    }),
    readOnly: true,
    async execute(args, ctx) {
      if (!/[\p{L}\p{N}\p{Extended_Pictographic}]/u.test(args.query)) {
        throw new ToolError("the query has no letters, digits or emoji to look for.");
      }
      // The workspace is the session's agent's (or a person's space in it), and so is the index it fills and searches.
      const memoryOf = spaceOwner(ctx.inbound) ?? agentOf(ctx.sessionKey);
      if (ctx.seesOwnerMemory) {
        const file = readMemoryFile(ctx.workspace);
        // Hits from MEMORY.md are dated when pincer first indexed that version of the file.
        const paragraphs = file ? memoryParagraphs(file.text) : [];
        await store.memory.syncMemoryFile(memoryOf, file?.hash ?? "absent", Date.now(), paragraphs);
      }
      const hits = await store.memory.search(args.query, {
        sessionKey: ctx.sessionKey,
        memoryFile: ctx.seesOwnerMemory,
        memoryOf,
        limit: args.limit ?? DEFAULT_LIMIT,
      });
      if (hits.length === 0) return `No memory matches "${args.query}".`;
      return hits.map((hit) => formatHit(hit, config.timezone)).join("\n\n");
    },
  };
}

const SOURCES: Partial<Record<SearchHit["kind"], string>> = { memory: "MEMORY.md", entry: "summary of earlier turns" };

function formatHit(hit: SearchHit, timezone: string): string {
  const date = hit.at ? formatDay(hit.at, timezone) : "undated";
  const source = SOURCES[hit.kind] ?? (hit.role === "user" ? "the user said" : "you said");
  return `[${date} · ${source}] ${hit.snippet.replace(/\s+/g, " ").trim()}`;
}
