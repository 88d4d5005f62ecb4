import { objectSchema, type Tool } from "../tool.js";
import { writeInScope } from "./safe-io.js";
import { type FileToolDeps, fileScope } from "./workspace-path.js";

export type WriteFileArgs = { path: string; content: string };

export function createWriteFileTool(deps: FileToolDeps): Tool<WriteFileArgs> {
  return {
    name: "write_file",
    description:
      "Create or overwrite a file in the workspace with the given content (missing folders are created). " +
      "To change part of an existing file, use edit_file.",
    parameters: objectSchema(["path", "content"], {
      path: { type: "string", minLength: 1, description: "File path, relative to the workspace." },
      content: { type: "string", description: "The complete new content of the file." },
    }),
    // Writing the same content again leaves the same file: safe to repeat after a crash.
    repeatable: true,

    async execute(args, ctx) {
      const bytes = Buffer.from(args.content, "utf8");
      const created = await writeInScope(args.path, fileScope(ctx, deps.home), bytes, true);
      return `${created ? "Created" : "Overwrote"} ${args.path} (${bytes.length} bytes).`;
    },
  };
}
