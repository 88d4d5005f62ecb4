import { closeSync, lstatSync, readlinkSync, realpathSync } from "node:fs";
import { readdir } from "node:fs/promises";
import { attempt } from "../../attempt.js";
import { formatBytes } from "../../bus/format-bytes.js";
import { objectSchema, type Tool } from "../tool.js";
import { atPath, openInScope } from "./safe-open.js";
import { displayPath, type FileToolDeps, fileScope } from "./workspace-path.js";

export type ListDirArgs = { path?: string };

const MAX_ENTRIES = 500;

export function createListDirTool(deps: FileToolDeps): Tool<ListDirArgs> {
  return {
    name: "list_dir",
    description:
      "List a folder of the workspace (default: the workspace itself): folders end with /, files show their size, symlinks their target.",
    parameters: objectSchema([], { path: { type: "string", description: "Folder path, relative to the workspace." } }),
    readOnly: true,

    async execute(args, ctx) {
      const opened = openInScope(args.path, fileScope(ctx, deps.home), { access: "read", want: "dir" });
      try {
        // Listed and inspected through the descriptor: a swap of the path cannot redirect it. An entry gone (or made
        // unreadable) since readdir is still listed, its target or size unknown.
        const entries = await readdir(atPath(opened.fd, "."), { withFileTypes: true });
        entries.sort((a, b) => a.name.localeCompare(b.name));
        const lines = entries.slice(0, MAX_ENTRIES).map((entry) => {
          const at = atPath(opened.fd, entry.name);
          if (entry.isDirectory()) return `${entry.name}/`;
          if (entry.isSymbolicLink()) return `${entry.name} -> ${attempt(() => readlinkSync(at)) ?? "?"}`;
          return `${entry.name}  (${formatBytes(attempt(() => lstatSync(at).size) ?? 0)})`;
        });
        const shown = displayPath(opened.path, realpathSync(ctx.workspace));
        if (entries.length === 0) return `${shown} is empty.`;
        if (entries.length > MAX_ENTRIES) lines.push(`… and ${entries.length - MAX_ENTRIES} more entries`);
        return `${shown}:\n${lines.join("\n")}`;
      } finally {
        closeSync(opened.fd);
      }
    },
  };
}
