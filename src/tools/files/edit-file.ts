import { objectSchema, type Tool, ToolError } from "../tool.js";
import { looksBinary } from "./binary.js";
import { matchesIgnoringWhitespace, nearestMatch } from "./nearest-match.js";
import { readInScope, writeInScope } from "./safe-io.js";
import { type FileToolDeps, fileScope } from "./workspace-path.js";

const MAX_EDIT_BYTES = 10 * 1024 * 1024;

export type EditFileArgs = { path: string; old_text: string; new_text: string; replace_all?: boolean };

export function createEditFileTool(deps: FileToolDeps): Tool<EditFileArgs> {
  return {
    name: "edit_file",
    description:
      "Replace exact text in a workspace file. old_text must match the file exactly (spaces, indentation and " +
      "line breaks included) and exactly once, unless replace_all is true. Read the file first.",
    parameters: objectSchema(["path", "old_text", "new_text"], {
      path: { type: "string", minLength: 1, description: "File path, relative to the workspace." },
      old_text: { type: "string", minLength: 1, description: "The exact text to replace." },
      new_text: { type: "string", description: "The text to put in its place." },
      replace_all: { type: "boolean", description: "Replace every occurrence (default false)." },
    }),

    async execute(args, ctx) {
      const scope = fileScope(ctx, deps.home);
      const { bytes } = await readInScope(args.path, scope, { access: "edit", want: "file" }, MAX_EDIT_BYTES);
      if (looksBinary(bytes))
        throw new ToolError(`"${args.path}" is a binary file; edit_file changes text files only.`);
      const text = bytes.toString("utf8");

      const lines = occurrenceLines(text, args.old_text);
      if (lines.length === 0) throw new ToolError(noMatchMessage(args.path, text, args.old_text));
      if (lines.length > 1 && !args.replace_all) {
        throw new ToolError(
          `old_text occurs ${lines.length} times in ${args.path} (lines ${lines.join(", ")}); include more of the surrounding text so it matches once, or set replace_all to true.`,
        );
      }
      // split/join, not String.replace: "$&" and friends in new_text must stay literal.
      await writeInScope(args.path, scope, Buffer.from(text.split(args.old_text).join(args.new_text), "utf8"), false);
      return lines.length === 1
        ? `Edited ${args.path}: replaced 1 occurrence at line ${lines[0]}.`
        : `Edited ${args.path}: replaced ${lines.length} occurrences (lines ${lines.join(", ")}).`;
    },
  };
}

/** 1-based line numbers where each non-overlapping occurrence starts. */
export function occurrenceLines(text: string, needle: string): number[] {
  const lines: number[] = [];
  let from = 0;
  for (;;) {
    const at = text.indexOf(needle, from);
    if (at === -1) return lines;
    lines.push(text.slice(0, at).split("\n").length);
    from = at + needle.length;
  }
}

function noMatchMessage(path: string, text: string, oldText: string): string {
  const head = `old_text was not found in ${path}.`;
  if (matchesIgnoringWhitespace(text, oldText)) {
    return `${head} It matches if spaces and line breaks are ignored, so the indentation or line breaks differ: read the file again and copy the text exactly.`;
  }
  const near = nearestMatch(text, oldText);
  if (!near) return `${head} Read the file again and copy the text exactly.`;
  const where = near.startLine === near.endLine ? `line ${near.startLine}` : `lines ${near.startLine}–${near.endLine}`;
  return `${head} The closest text is at ${where} (${near.edits} characters differ):\n${near.text}`;
}
