import { closeSync, realpathSync } from "node:fs";
import { join } from "node:path";
import type { RE2JS } from "re2js";
import { type Tool, ToolError } from "../tool.js";
import { looksBinary } from "./binary.js";
import type { FileToolDeps } from "./deps.js";
import { compileGlob, MAX_GLOB_CHARS } from "./glob-pattern.js";
import { checkPatternLength, LineSearcher, MAX_PATTERN_CHARS, SearchSlots } from "./line-search.js";
import { hiddenBelow, type Opened, openInScope, type PathScope } from "./safe-open.js";
import { readOpened } from "./safe-read.js";
import { openRegularAt, type TreeOptions, visitFiles } from "./walk-tree.js";
import { displayPath } from "./workspace-path.js";

const MAX_MATCHES = 200;
const MAX_GLOB_RESULTS = 500;
const MAX_GREP_FILE_BYTES = 2 * 1024 * 1024;
/** Bytes searched per call at most; past it the search stops and says so. */
const MAX_GREP_TOTAL_BYTES = 64 * 1024 * 1024;
/** Entries looked at per call at most (files and folders). */
const MAX_TREE_ENTRIES = 100_000;
/** Hard limit of one grep call; the registry's tool timeout may stop it sooner. */
const GREP_TIME_LIMIT_SECONDS = 30;
const MAX_LINE_CHARS = 300;
const SKIPPED_FOLDERS = new Set([".git", "node_modules"]);

export type GlobArgs = { pattern: string; path?: string };
export type GrepArgs = GlobArgs & { glob?: string };

/** Searches running at once per pincer process; more wait for a free worker. */
const MAX_CONCURRENT_SEARCHES = 4;

export function createGrepTool(deps: FileToolDeps): Tool<GrepArgs> {
  const slots = new SearchSlots(MAX_CONCURRENT_SEARCHES);
  return {
    name: "grep",
    description:
      "Search file contents in the workspace with a regular expression (RE2 syntax, as in ripgrep or Go: no " +
      "lookaround or backreferences; start with (?i) to ignore case). Prints path:line: text, at most " +
      `${MAX_MATCHES} matches; skips binary files, .git and node_modules.`,
    parameters: {
      type: "object",
      properties: {
        pattern: {
          type: "string",
          minLength: 1,
          maxLength: MAX_PATTERN_CHARS,
          description: "Regular expression to look for.",
        },
        path: { type: "string", description: "File or folder to search, relative to the workspace (default: all)." },
        glob: {
          type: "string",
          maxLength: MAX_GLOB_CHARS,
          description: 'Only search files whose path matches this glob, e.g. "*.md" or "src/**/*.ts".',
        },
      },
      required: ["pattern"],
      additionalProperties: false,
    },
    readOnly: true,
    // The registry aborts the call at this limit; the abort terminates the matching worker.
    timeoutSeconds: Math.min(GREP_TIME_LIMIT_SECONDS, deps.searchSeconds ?? GREP_TIME_LIMIT_SECONDS),

    async execute(args, ctx) {
      checkPatternLength(args.pattern);
      const filter = compileGlob(args.glob ?? "**/*");
      const scope = deps.scope(ctx);
      const release = await slots.acquire(ctx.signal);
      let opened: Opened | undefined;
      let searcher: LineSearcher | undefined;
      const stop = () => void searcher?.close();
      try {
        searcher = new LineSearcher(args.pattern);
        ctx.signal.addEventListener("abort", stop, { once: true });
        await searcher.ready;
        opened = openInScope(args.path, scope, { access: "read", want: "any" });
        return await grep(args, opened, scope, filter, searcher, ctx);
      } catch (err) {
        if (ctx.signal.aborted) throw new ToolError("grep was stopped (time limit or /stop).");
        throw err;
      } finally {
        ctx.signal.removeEventListener("abort", stop);
        if (opened) closeSync(opened.fd);
        await searcher?.close().catch(() => undefined);
        release();
      }
    },
  };
}

async function grep(
  args: GrepArgs,
  opened: Opened,
  scope: PathScope,
  filter: RE2JS,
  searcher: LineSearcher,
  ctx: { workspace: string; signal: AbortSignal },
): Promise<string> {
  const workspaceReal = realpathSync(ctx.workspace);
  const show = (path: string) => displayPath(path, workspaceReal);
  // One match past the cap tells whether anything was left out.
  const matches: string[] = [];
  let files = 0;
  let bytesSearched = 0;
  let note = "";
  const searchFile = async (file: Opened, shown: string) => {
    if (file.stats.size > MAX_GREP_FILE_BYTES) return;
    if (bytesSearched + file.stats.size > MAX_GREP_TOTAL_BYTES) {
      note = `(stopped after ${MAX_GREP_TOTAL_BYTES / 1024 / 1024} MB searched; narrow the path or glob)`;
      return false;
    }
    const bytes = await readOpened(file, MAX_GREP_FILE_BYTES, shown).catch(() => undefined);
    if (!bytes || looksBinary(bytes)) return;
    files++;
    bytesSearched += bytes.length;
    const text = bytes.toString("utf8");
    const hits = await searcher.search(text, MAX_MATCHES + 1 - matches.length);
    const lines = text.split("\n");
    for (const i of hits) {
      const line = lines[i].replace(/\r$/, "");
      const cut = line.length > MAX_LINE_CHARS ? `${line.slice(0, MAX_LINE_CHARS)}…` : line;
      matches.push(`${shown}:${i + 1}: ${cut}`);
    }
    return matches.length <= MAX_MATCHES;
  };

  if (opened.stats.isFile()) {
    await searchFile(opened, show(opened.path));
  } else {
    const options = walkOptions(scope, opened, ctx.signal);
    const { hidden } = options;
    const walk = await visitFiles(opened.fd, options, async ({ rel, dirFd, name }) => {
      if (!filter.test(rel)) return true;
      const file = openRegularAt(dirFd, name);
      if (!file) return true;
      try {
        // MEMORY.md, under any name, is not searched for a chat that may not read it.
        if (hidden.some((h) => h.dev === file.stats.dev && h.ino === file.stats.ino)) return true;
        const path = join(opened.path, rel);
        return await searchFile({ ...file, path, created: false }, show(path));
      } finally {
        closeSync(file.fd);
      }
    });
    if (walk.truncated) note ||= `(stopped after ${MAX_TREE_ENTRIES} entries; narrow the path or glob)`;
  }
  if (ctx.signal.aborted) throw new ToolError("grep was stopped (time limit or /stop).");
  const truncated = matches.length > MAX_MATCHES;
  matches.length = Math.min(matches.length, MAX_MATCHES);
  if (matches.length === 0) return `No matches for /${args.pattern}/ in ${files} file(s).${note ? ` ${note}` : ""}`;
  if (truncated) matches.push(`(stopped at ${MAX_MATCHES} matches; narrow the pattern, path or glob)`);
  if (note) matches.push(note);
  return matches.join("\n");
}

function walkOptions(scope: PathScope, opened: Opened, signal: AbortSignal): TreeOptions {
  return { skip: SKIPPED_FOLDERS, hidden: hiddenBelow(scope, opened.path), signal, maxEntries: MAX_TREE_ENTRIES };
}

export function createGlobTool(deps: FileToolDeps): Tool<GlobArgs> {
  return {
    name: "glob",
    description: `Find files in the workspace by name pattern, e.g. "**/*.md" or "notes/2024-*". At most ${MAX_GLOB_RESULTS} paths, sorted.`,
    parameters: {
      type: "object",
      properties: {
        pattern: {
          type: "string",
          minLength: 1,
          maxLength: MAX_GLOB_CHARS,
          description: "Glob pattern, relative to path.",
        },
        path: {
          type: "string",
          description: "Folder to search from, relative to the workspace (default: the workspace).",
        },
      },
      required: ["pattern"],
      additionalProperties: false,
    },
    readOnly: true,

    async execute(args, ctx) {
      const filter = compileGlob(args.pattern);
      const scope = deps.scope(ctx);
      const opened = openInScope(args.path, scope, { access: "read", want: "any" });
      const found: string[] = [];
      const workspaceReal = realpathSync(ctx.workspace);
      try {
        if (!opened.stats.isDirectory()) {
          throw new ToolError(`"${args.path}" is a file; glob needs a folder as path.`);
        }
        await visitFiles(opened.fd, walkOptions(scope, opened, ctx.signal), ({ rel }) => {
          if (filter.test(rel)) found.push(displayPath(join(opened.path, rel), workspaceReal));
          return true;
        });
      } finally {
        closeSync(opened.fd);
      }
      if (found.length === 0) return `No files match ${args.pattern}.`;
      found.sort();
      const shown = found.slice(0, MAX_GLOB_RESULTS);
      if (found.length > MAX_GLOB_RESULTS) shown.push(`… and ${found.length - MAX_GLOB_RESULTS} more`);
      return shown.join("\n");
    },
  };
}
