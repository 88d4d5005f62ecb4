import type { Tool } from "../tool.js";
import { createEditFileTool } from "./edit-file.js";
import { createListDirTool } from "./list-dir.js";
import { createReadFileTool } from "./read-file.js";
import { createGlobTool, createGrepTool } from "./search-tools.js";
import type { FileToolDeps } from "./workspace-path.js";
import { createWriteFileTool } from "./write-file.js";

/** read_file, write_file, edit_file, list_dir, grep and glob, confined to the workspace (media readable). */
export function createFileTools(deps: FileToolDeps): Tool[] {
  const tools = [createReadFileTool, createWriteFileTool, createEditFileTool, createListDirTool, createGrepTool];
  return [...tools, createGlobTool].map((create) => create(deps) as Tool);
}
