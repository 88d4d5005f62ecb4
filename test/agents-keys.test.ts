/**
 * A key per model: two agents on two endpoints, each endpoint taking only its own key. `pincer doctor` asks every
 * model of every agent with the key its entry names, and says which one fails. Run as a user runs it: the built CLI
 * against two scripted servers.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeOpenAI, startFakeOpenAI } from "./fakes/openai-server.js";
import { tempHome } from "./helpers/app.js";
import { pincerAsNewUser } from "./helpers/daemon.js";
import { hasSystemPackage } from "./helpers/system-packages.js";

const bwrap = hasSystemPackage("bwrap", "bubblewrap");

let main: FakeOpenAI;
let work: FakeOpenAI;
beforeAll(async () => {
  [main, work] = await Promise.all([startFakeOpenAI(), startFakeOpenAI()]);
  main.requireKey("main-key");
  work.requireKey("work-key");
  work.models.push("work-model", "work-big");
});
afterAll(() => Promise.all([main.close(), work.close()]));

function withAgents(cli: string[], env: Record<string, string>, top: object = {}) {
  const home = tempHome();
  const config = join(home, "config.json");
  writeFileSync(
    config,
    JSON.stringify({
      ...top,
      agents: {
        work: {
          model: { name: "work-model", baseUrl: work.url, apiKeyEnv: "WORK_KEY" },
          agent: { models: [{ name: "work-big", baseUrl: work.url, apiKeyEnv: "WORK_KEY" }] },
        },
      },
    }),
  );
  return pincerAsNewUser(cli, {
    OPENAI_API_KEY: "main-key",
    OPENAI_BASE_URL: main.url,
    PINCER_HOME: home,
    PINCER_CONFIG: config,
    PINCER_SANDBOX: "none",
    ...env,
  });
}

const doctor = (env: Record<string, string>) => withAgents(["doctor"], env);

const modelLines = (stdout: string) => stdout.split("\n").filter((line) => /\] model( \(agent \w+\))?: /.test(line));

describe("pincer doctor with a key per model", () => {
  it("asks each agent's models with their own key, and each endpoint sees only its own", async () => {
    const result = await doctor({ WORK_KEY: "work-key" });
    expect(modelLines(result.stdout)).toEqual([
      `[ok  ] model: gpt-4.1-mini at ${main.url} answers`,
      `[ok  ] model (agent work): work-model at ${work.url} answers`,
      `[ok  ] model (agent work): work-big at ${work.url} answers`,
    ]);
    expect(new Set(main.keysSeen)).toEqual(new Set(["main-key"]));
    expect(new Set(work.keysSeen)).toEqual(new Set(["work-key"]));
  });

  it("names the agent, model and key variable that fails, and exits 1", async () => {
    const result = await doctor({ WORK_KEY: "stale-key" });
    expect(modelLines(result.stdout)).toEqual([
      `[ok  ] model: gpt-4.1-mini at ${main.url} answers`,
      `[FAIL] model (agent work): ${work.url} refused WORK_KEY (401) for work-model: check the key`,
      `[FAIL] model (agent work): ${work.url} refused WORK_KEY (401) for work-big: check the key`,
    ]);
    expect(result.code).toBe(1);
    expect(main.keysSeen).not.toContain("stale-key");
  });

  it("says which variable is not set instead of sending another agent's key", async () => {
    work.keysSeen.length = 0;
    const result = await doctor({});
    expect(modelLines(result.stdout)).toContain(
      `[FAIL] model (agent work): WORK_KEY is not set: put the key for work-model at ${work.url} in .env`,
    );
    expect(work.keysSeen).toEqual([]);
  });
});

describe.skipIf(!bwrap)("another agent's key in the environment", () => {
  it("is gone before any tool runs: an exec allowed to pass WORK_KEY on sees nothing", async () => {
    main.respond((request) => {
      const result = request.messages.find((m) => m.role === "tool");
      if (result) return { content: `seen: ${String(result.content)}` };
      return { toolCalls: [{ name: "exec", arguments: { command: 'echo "key=[$WORK_KEY]"' } }] };
    });
    try {
      const top = { exec: { envAllowlist: ["WORK_KEY"] } };
      const result = await withAgents(["agent", "-m", "show me"], { WORK_KEY: "work-key" }, top);
      expect(result.stdout).toContain("key=[]");
      expect(result.stdout).not.toContain("work-key");
      expect(result.code).toBe(0);
    } finally {
      main.respond(() => ({ content: "ok" }));
    }
  });

  it("and the other way round: the work agent's exec, allowed both keys' variables, sees neither", async () => {
    work.respond((request) => {
      const result = request.messages.find((m) => m.role === "tool");
      if (result) return { content: `seen: ${String(result.content)}` };
      return { toolCalls: [{ name: "exec", arguments: { command: 'echo "keys=[$OPENAI_API_KEY][$WORK_KEY]"' } }] };
    });
    try {
      const top = { exec: { envAllowlist: ["OPENAI_API_KEY", "WORK_KEY"] } };
      const env = { WORK_KEY: "work-key", PINCER_SANDBOX: "bwrap" };
      const result = await withAgents(["agent", "--agent", "work", "-m", "show me"], env, top);
      expect(result.stdout).toContain("keys=[][]");
      expect(result.stdout).not.toMatch(/main-key|work-key/);
      expect(result.code).toBe(0);
    } finally {
      work.respond(() => ({ content: "ok" }));
    }
  });
});
