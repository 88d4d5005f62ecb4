import { memoryParagraphs, readMemoryFile } from "../memory/memory-file.js";
import type { SearchHit } from "../store/store.js";
import { type Tool, type ToolDeps, ToolError } from "./tool.js";

type Args = { query: string; limit?: number };

const DEFAULT_LIMIT = 8;
const MAX_LIMIT = 25;

/**
 * Full-text search (ranked, any script, CJK too) over what this conversation may see:
 * the owner's MEMORY.md where this chat may see it (ctx.seesOwnerMemory), the summaries of its consolidated turns, and its past messages —
 * also those from before /new — never another chat's.
 */
export function createMemorySearchTool({ store, config }: Pick<ToolDeps, "store" | "config">): Tool<Args> {
  return {
    name: "memory_search",
    description:
      "Search long-term memory: MEMORY.md, summaries of earlier turns and past messages of this chat (also from before /new). " +
      "Use it when the user refers to something said before that is not in view. Returns dated snippets, best first.",
    parameters: {
      type: "object",
      properties: {
        query: { type: "string", minLength: 1, maxLength: 500, description: "Words to look for, in any language." },
        limit: {
          type: "integer",
          minimum: 1,
          maximum: MAX_LIMIT,
          description: `Most results (default ${DEFAULT_LIMIT}).`,
        },
      },
      required: ["query"],
      additionalProperties: false,
    },
    readOnly: true,
    async execute(args, ctx) {
      if (!/[\p{L}\p{N}\p{Extended_Pictographic}]/u.test(args.query)) {
        throw new ToolError("the query has no letters, digits or emoji to look for.");
      }
      const memoryFile = ctx.seesOwnerMemory;
      if (memoryFile) {
        const file = readMemoryFile(ctx.workspace);
        // Hits from MEMORY.md are dated when pincer first indexed that version of the file.
        if (file) await store.memory.syncMemoryFile(file.hash, Date.now(), memoryParagraphs(file.text));
        else await store.memory.syncMemoryFile("absent", Date.now(), []);
      }
      const hits = await store.memory.search(args.query, {
        sessionKey: ctx.sessionKey,
        memoryFile,
        limit: args.limit ?? DEFAULT_LIMIT,
      });
      if (hits.length === 0) return `No memory matches "${args.query}".`;
      return hits.map((hit) => formatHit(hit, config.timezone)).join("\n\n");
    },
  };
}

function formatHit(hit: SearchHit, timezone: string): string {
  const date = hit.at ? new Intl.DateTimeFormat("en-CA", { timeZone: timezone }).format(hit.at) : "undated";
  const source =
    hit.kind === "memory"
      ? "MEMORY.md"
      : hit.kind === "entry"
        ? "summary of earlier turns"
        : hit.role === "user"
          ? "the user said"
          : "you said";
  return `[${date} · ${source}] ${hit.snippet.replace(/\s+/g, " ").trim()}`;
}
