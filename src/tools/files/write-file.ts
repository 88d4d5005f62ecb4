import { mkdir, stat, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import { type Tool, ToolError } from "../tool.js";
import type { FileToolDeps } from "./deps.js";
import { fileError } from "./errors.js";
import { resolveInWorkspace } from "./workspace-path.js";

export type WriteFileArgs = {
  path: string;
  content: string;
};

export function createWriteFileTool(deps: FileToolDeps): Tool<WriteFileArgs> {
  return {
    name: "write_file",
    description:
      "Create or overwrite a file in the workspace with the given content (missing folders are created). " +
      "To change part of an existing file, use edit_file.",
    parameters: {
      type: "object",
      properties: {
        path: { type: "string", minLength: 1, description: "File path, relative to the workspace." },
        content: { type: "string", description: "The complete new content of the file." },
      },
      required: ["path", "content"],
      additionalProperties: false,
    },

    async execute(args, ctx) {
      const real = await resolveInWorkspace(args.path, deps.scope(ctx.workspace), "write");
      const existing = await stat(real).catch(() => undefined);
      if (existing?.isDirectory()) throw new ToolError(`"${args.path}" is a folder; give a file path.`);
      await mkdir(dirname(real), { recursive: true }).catch((err) => fileError(err, args.path));
      await writeFile(real, args.content, "utf8").catch((err) => fileError(err, args.path));
      const bytes = Buffer.byteLength(args.content, "utf8");
      return `${existing ? "Overwrote" : "Created"} ${args.path} (${bytes} bytes).`;
    },
  };
}
