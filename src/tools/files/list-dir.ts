import { lstat, readdir, readlink, realpath } from "node:fs/promises";
import { join } from "node:path";
import type { Tool } from "../tool.js";
import type { FileToolDeps } from "./deps.js";
import { fileError } from "./errors.js";
import { displayPath, resolveInWorkspace } from "./workspace-path.js";

export type ListDirArgs = {
  path?: string;
};

const MAX_ENTRIES = 500;

export function createListDirTool(deps: FileToolDeps): Tool<ListDirArgs> {
  return {
    name: "list_dir",
    description:
      "List a folder of the workspace (default: the workspace itself): folders end with /, files show their size, symlinks their target.",
    parameters: {
      type: "object",
      properties: { path: { type: "string", description: "Folder path, relative to the workspace." } },
      additionalProperties: false,
    },
    readOnly: true,

    async execute(args, ctx) {
      const real = await resolveInWorkspace(args.path, deps.scope(ctx.workspace), "read");
      const entries = await readdir(real, { withFileTypes: true }).catch((err) => fileError(err, args.path ?? "."));
      entries.sort((a, b) => a.name.localeCompare(b.name));
      const lines: string[] = [];
      for (const entry of entries.slice(0, MAX_ENTRIES)) {
        const full = join(real, entry.name);
        if (entry.isDirectory()) lines.push(`${entry.name}/`);
        else if (entry.isSymbolicLink()) lines.push(`${entry.name} -> ${await readlink(full).catch(() => "?")}`);
        else lines.push(`${entry.name}  (${formatSize((await lstat(full).catch(() => undefined))?.size ?? 0)})`);
      }
      const shown = displayPath(real, await realpath(ctx.workspace));
      if (entries.length === 0) return `${shown} is empty.`;
      if (entries.length > MAX_ENTRIES) lines.push(`… and ${entries.length - MAX_ENTRIES} more entries`);
      return `${shown}:\n${lines.join("\n")}`;
    },
  };
}

export function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}
