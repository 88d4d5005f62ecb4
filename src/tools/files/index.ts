import type { Config } from "../../config/config.js";
import { mediaDir } from "../../paths.js";
import type { Tool } from "../tool.js";
import type { FileToolDeps } from "./deps.js";
import { createEditFileTool } from "./edit-file.js";
import { createListDirTool } from "./list-dir.js";
import { createReadFileTool } from "./read-file.js";
import { createGlobTool, createGrepTool } from "./search-tools.js";
import { fileScope } from "./workspace-path.js";
import { createWriteFileTool } from "./write-file.js";

/** read_file, write_file, edit_file, list_dir, grep and glob, confined to the workspace (media readable). */
export function createFileTools(
  config: Pick<Config, "home"> & { agent?: Pick<Config["agent"], "toolTimeoutSeconds"> },
): Tool[] {
  const deps: FileToolDeps = {
    scope: (ctx) => fileScope(ctx, config.home, mediaDir(config.home)),
    searchSeconds: config.agent?.toolTimeoutSeconds,
  };
  return [
    createReadFileTool(deps),
    createWriteFileTool(deps),
    createEditFileTool(deps),
    createListDirTool(deps),
    createGrepTool(deps),
    createGlobTool(deps),
  ];
}
