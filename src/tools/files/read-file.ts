import { integerParam, objectSchema, type Tool, ToolError } from "../tool.js";
import { describeBinary, looksBinary } from "./binary.js";
import { readInScope } from "./safe-io.js";
import { type FileToolDeps, fileScope } from "./workspace-path.js";

export type ReadFileArgs = { path: string; offset?: number; limit?: number };

const MAX_FILE_BYTES = 10 * 1024 * 1024;
const DEFAULT_LIMIT = 2000;
const MAX_OUTPUT_CHARS = 50_000;
const MAX_LINE_CHARS = 2000;

export function createReadFileTool(deps: FileToolDeps): Tool<ReadFileArgs> {
  return {
    name: "read_file",
    description:
      "Read a text file from the workspace (or a received file from the media folder), with line numbers. " +
      `Shows ${DEFAULT_LIMIT} lines from offset by default; use offset/limit for long files.`,
    parameters: objectSchema(["path"], {
      path: { type: "string", minLength: 1, description: "File path, relative to the workspace." },
      offset: integerParam(1, undefined, "First line to show (1-based, default 1)."),
      limit: integerParam(1, undefined, `How many lines to show (default ${DEFAULT_LIMIT}).`),
    }),
    readOnly: true,

    async execute(args, ctx) {
      // "any": a folder gets readOpened's hint to use list_dir.
      const request = { access: "read", want: "any" } as const;
      const { bytes } = await readInScope(args.path, fileScope(ctx, deps.home), request, MAX_FILE_BYTES);
      if (looksBinary(bytes)) {
        const kind = describeBinary(bytes);
        throw new ToolError(
          `"${args.path}" is a binary file (${kind ? `${kind}, ` : ""}${bytes.length} bytes); read_file shows text only. Use exec (for example file, xxd | head, or a converter) to inspect it.`,
        );
      }
      return numberLines(bytes.toString("utf8"), args.offset ?? 1, args.limit ?? DEFAULT_LIMIT);
    },
  };
}

/** `cat -n` style lines, from `offset`, at most `limit` lines and MAX_OUTPUT_CHARS characters. */
export function numberLines(text: string, offset: number, limit: number): string {
  if (text === "") return "(empty file)";
  const lines = text.split("\n");
  if (lines.at(-1) === "") lines.pop();
  if (offset > lines.length)
    throw new ToolError(`offset ${offset} is past the end: the file has ${lines.length} lines.`);
  const out: string[] = [];
  let chars = 0;
  let last = offset - 1;
  for (let i = offset - 1; i < Math.min(lines.length, offset - 1 + limit); i++) {
    let line = lines[i].replace(/\r$/, "");
    if (line.length > MAX_LINE_CHARS) line = `${line.slice(0, MAX_LINE_CHARS)}… (line cut at ${MAX_LINE_CHARS} chars)`;
    const numbered = `${String(i + 1).padStart(6)}\t${line}`;
    if (chars + numbered.length > MAX_OUTPUT_CHARS && out.length > 0) break;
    out.push(numbered);
    chars += numbered.length + 1;
    last = i + 1;
  }
  if (last < lines.length) {
    out.push(`(showing lines ${offset}–${last} of ${lines.length}; continue with offset=${last + 1})`);
  }
  return out.join("\n");
}
