/**
 * exec and the file tools through the agent loop: the real model client against the scripted
 * OpenAI-compatible server, the tools as createTools registers them, the real bwrap.
 */
import { mkdirSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runAgentLoop } from "../src/agent/loop.js";
import { type Config, loadConfig } from "../src/config/config.js";
import { createOpenAIModel } from "../src/llm/model.js";
import { databasePath } from "../src/paths.js";
import { openSqliteStore, type SqliteStore } from "../src/store/sqlite/sqlite-store.js";
import { createTools } from "../src/tools/index.js";
import { ToolRegistry } from "../src/tools/registry.js";
import { type FakeOpenAI, startFakeOpenAI } from "./fakes/openai-server.js";
import { tempHome } from "./helpers/app.js";
import { hasSystemPackage } from "./helpers/system-packages.js";
import { toolContext } from "./helpers/tools.js";
import { until } from "./helpers/until.js";

const bwrap = hasSystemPackage("bwrap", "bubblewrap");

const SECRET = "dotenv-secret-loop-91c";
const log = pino({ level: "silent" });
/** Unique to this run, so another run's processes on a shared machine never count. */
const MARKER = `pincer-loop-${process.pid}-${Date.now()}`;

let root: string;
let home: string;
let workspace: string;
let config: Config;
let store: SqliteStore;
let fake: FakeOpenAI;

beforeAll(async () => {
  root = realpathSync(tempHome("pincer-exec-loop-"));
  home = join(root, "home");
  workspace = join(home, "workspace");
  mkdirSync(workspace, { recursive: true });
  writeFileSync(join(home, ".env"), `OPENAI_API_KEY=${SECRET}\n`);
  fake = await startFakeOpenAI();
  config = loadConfig({
    OPENAI_API_KEY: SECRET,
    OPENAI_BASE_URL: fake.url,
    PINCER_HOME: home,
    PINCER_SANDBOX: "bwrap",
    PINCER_TIMEZONE: "UTC",
  });
  config.agent.modelRetries = 0;
  store = openSqliteStore(databasePath(home));
});

afterAll(async () => {
  await store.close();
  await fake.close();
  rmSync(root, { recursive: true, force: true });
});

function setup(signal: AbortSignal) {
  const registry = new ToolRegistry();
  for (const tool of createTools({ config, store })) registry.register(tool);
  const model = createOpenAIModel({ ...config.openai, timeoutSeconds: 10, retries: 0, stream: false });
  return { deps: { model, registry, maxIterations: 5, log }, toolContext: toolContext("loop", workspace, signal) };
}

/** The tool results the model received in the given request, in call order. */
function toolResults(requestIndex: number): string[] {
  return fake.requests[requestIndex].messages.filter((m) => m.role === "tool").map((m) => String(m.content));
}

describe.skipIf(!bwrap)("exec and file tools through the agent loop", () => {
  it("offers the tools, runs them sandboxed and feeds the results back", async () => {
    fake.requests.length = 0;
    fake.enqueue(
      {
        toolCalls: [
          { name: "exec", arguments: { command: `cat ${home}/.env` } },
          // Spelled so the guard cannot see the path: only the sandbox stands in the way.
          { name: "exec", arguments: { command: `cat "$(echo ${encoded(home)} | base64 -d)/.env"; env | sort` } },
          { name: "read_file", arguments: { path: "../.env" } },
        ],
      },
      {
        toolCalls: [
          { name: "write_file", arguments: { path: "notes/plan.md", content: "step one\nstep two\n" } },
          { name: "exec", arguments: { command: "wc -l < notes/plan.md && cat notes/plan.md | grep two" } },
          { name: "edit_file", arguments: { path: "notes/plan.md", old_text: "step two", new_text: "step 2" } },
          { name: "grep", arguments: { pattern: "step \\d" } },
        ],
      },
      { content: "All done." },
    );
    const { deps, toolContext } = setup(new AbortController().signal);
    const result = await runAgentLoop(deps, {
      system: "You are pincer.",
      history: [],
      user: { role: "user", content: "go" },
      toolContext,
    });

    expect(result.reply).toBe("All done.");
    const offered = (fake.requests[0].tools ?? []).map((t) => t.function.name);
    expect(offered).toEqual(
      expect.arrayContaining(["exec", "read_file", "write_file", "edit_file", "list_dir", "grep", "glob"]),
    );

    const [guarded, execResult, readResult] = toolResults(1);
    expect(guarded).toBe(
      `Error: the command was blocked by the safety guard: ${home}/.env is pincer's own data folder, which commands never touch.`,
    );
    expect(execResult).toContain(`cat: ${home}/.env: No such file or directory`);
    // HOME is the sandbox's fresh /tmp, never the workspace (issue 36, point 5).
    expect(execResult).toMatch(/^HOME=\/tmp$/m);
    expect(execResult).not.toContain(SECRET);
    expect(readResult).toMatch(/^Error: "\.\.\/\.env" leads outside the workspace/);

    expect(toolResults(2).slice(3)).toEqual([
      "Created notes/plan.md (18 bytes).",
      "2\nstep two",
      "Edited notes/plan.md: replaced 1 occurrence at line 2.",
      "notes/plan.md:2: step 2",
    ]);
    expect(readFileSync(join(workspace, "notes", "plan.md"), "utf8")).toBe("step one\nstep 2\n");
  });

  it("/stop during exec ends the turn and kills the sandboxed command", async () => {
    fake.requests.length = 0;
    fake.enqueue({ toolCalls: [{ name: "exec", arguments: { command: `sh -c 'sleep 49; : ${MARKER}'` } }] });
    const stop = new AbortController();
    const { deps, toolContext } = setup(stop.signal);
    const turn = runAgentLoop(deps, { system: "s", history: [], user: { role: "user", content: "go" }, toolContext });
    const settled = turn.then(
      () => "finished",
      () => "aborted",
    );
    await until(() => processesWith(MARKER).length > 0, "the sandboxed command to start");
    stop.abort();
    expect(await settled).toBe("aborted");
    // The kernel tears the sandbox's PID namespace down asynchronously: poll, on a deadline.
    const left = () => processesWith(MARKER).join("\n");
    await until(() => processesWith(MARKER).length === 0, "the sandbox's processes to go", 5000, left);
    expect(processesWith(MARKER)).toEqual([]);
  });
});

function encoded(text: string): string {
  return Buffer.from(text).toString("base64");
}

function processesWith(marker: string): string[] {
  return readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .flatMap((pid) => {
      try {
        const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8");
        return cmdline.includes(marker) ? [pid] : [];
      } catch {
        return [];
      }
    });
}
