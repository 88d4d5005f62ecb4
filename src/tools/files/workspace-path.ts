import { join, relative } from "node:path";
import { conversationMediaDir } from "../../bus/types.js";
import type { Config } from "../../config/config.js";
import { mediaDir } from "../../paths.js";
import type { ToolContext } from "../tool.js";
import { isInside, type PathScope } from "./safe-open.js";

export function displayPath(real: string, workspaceReal: string): string {
  if (!isInside(workspaceReal, real)) return real;
  return relative(workspaceReal, real) || ".";
}

/** Every file tool's scope: the workspace, this chat's media to read, PINCER_HOME (and MEMORY.md if not its) hidden. */
export function fileScope(ctx: ToolContext, home: string): PathScope {
  const memory = ctx.seesOwnerMemory ? [] : [join(ctx.workspace, "MEMORY.md")];
  return {
    workspace: ctx.workspace,
    readRoots: [conversationMediaDir(mediaDir(home), ctx.sessionKey), ...(ctx.shared?.read ?? [])],
    writeRoots: ctx.shared?.write,
    hidden: [home, ...memory],
  };
}

/** PINCER_HOME (hidden, holding the media folder) and the tool timeout, which grep never exceeds. */
export type FileToolDeps = Pick<Config, "home"> & { agent?: Pick<Config["agent"], "toolTimeoutSeconds"> };
