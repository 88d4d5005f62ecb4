import { ToolError } from "../tool.js";

/** Turns the usual file-system errors into a sentence for the model; anything else is rethrown. */
export function fileError(err: unknown, path: string): never {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === "ENOENT") throw new ToolError(`"${path}" does not exist.`);
  if (code === "EACCES" || code === "EPERM") throw new ToolError(`"${path}" cannot be accessed (permission denied).`);
  if (code === "EISDIR") throw new ToolError(`"${path}" is a folder, not a file.`);
  if (code === "ENOTDIR") throw new ToolError(`"${path}": a part of the path is a file, not a folder.`);
  throw err;
}
