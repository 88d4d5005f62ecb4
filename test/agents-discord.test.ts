/**
 * Two agents on one Discord application (real discord.js against the fake REST + gateway): one channel bound to
 * `alpha`, the rest of the server to `beta`. Messages route as bound and are answered in each persona on each agent's
 * endpoint with its own key; then, from beta's channel, an outsider tries to reach alpha's files, memory, history,
 * jobs, usage, models and the control page through every tool and command (exec in real bwrap), and gets none of it.
 * On both engines: the SQLite file, and PostgreSQL (clustered mode in one process).
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { FakeUser, SentMessage } from "./fakes/discord-server.js";
import { type ChatRequest, type FakeOpenAI, type FakeReply, startFakeOpenAI } from "./fakes/openai-server.js";
import { tempHome } from "./helpers/app.js";
import { type DiscordHarness, startDiscordHarness } from "./helpers/discord.js";
import { ENGINES, engineEnv } from "./helpers/engines.js";
import { hasSystemPackage } from "./helpers/system-packages.js";

const OWNER: FakeUser = { id: "200000000000000001", username: "alice" };
const GUEST: FakeUser = { id: "200000000000000002", username: "mallory" };
const GUILD = "300000000000000001";
const ALPHA_CH = "310000000000000001";
const BETA_CH = "310000000000000002";
const ALPHA_THREAD = "320000000000000001";
const SECRETS = ["ALPHA-SECRET-FILE", "ALPHA-MEMORY-FACT", "ALPHA-HISTORY-WORD", "ALPHA-JOB-TEXT", "alpha-key-value"];
const bwrap = hasSystemPackage("bwrap", "bubblewrap");

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const clean of cleanups.splice(0).reverse()) await clean();
});
let alphaModel: FakeOpenAI;
beforeAll(async () => {
  alphaModel = await startFakeOpenAI();
  alphaModel.requireKey("alpha-key-value");
});
afterAll(() => alphaModel.close());

const lastText = (r: ChatRequest) => String(r.messages.at(-1)?.content ?? "");
const systemOf = (r: ChatRequest) => String(r.messages[0]?.content ?? "");
const conversationOf = (r: ChatRequest) => /Conversation: (\S+)/.exec(systemOf(r))?.[1];

async function start(
  sandbox: "bwrap" | "none",
  engine: Record<string, string>,
): Promise<DiscordHarness & { say: Say; answer: Answer }> {
  const dir = tempHome("pincer-discord-agents-");
  const configFile = join(dir, "config.json");
  const model = (name: string) => ({ name, baseUrl: alphaModel.url, apiKeyEnv: "ALPHA_KEY" });
  writeFileSync(
    configFile,
    JSON.stringify({
      agents: {
        alpha: { model: model("alpha-model"), agent: { models: [model("alpha-big")] } },
        beta: { model: "beta-model", agent: { models: [{ name: "beta-big" }] } },
      },
      bindings: [
        { agent: "beta", channel: "discord", guild: GUILD },
        { agent: "alpha", channel: "discord", chat: ALPHA_CH },
      ],
    }),
  );
  const h = await startDiscordHarness(cleanups, {
    allowFrom: `${OWNER.id},*`,
    env: { PINCER_CONFIG: configFile, ALPHA_KEY: "alpha-key-value", PINCER_SANDBOX: sandbox, ...engine },
    fake: {
      guilds: [
        {
          id: GUILD,
          name: "shop",
          channels: [
            { id: ALPHA_CH, name: "alpha" },
            { id: BETA_CH, name: "general" },
          ],
          threads: [{ id: ALPHA_THREAD, name: "archive", parentId: ALPHA_CH }],
        },
      ],
    },
  });
  for (const [name, persona] of [
    ["alpha", "You are Alpha the archivist."],
    ["beta", "You are Beta the baker."],
  ]) {
    writeFileSync(join(h.config.agents[name].workspace, "SOUL.md"), persona);
  }
  const say: Say = (channelId, content, author = OWNER) =>
    void h.discord.dispatchMessage({
      channelId,
      guildId: GUILD,
      author,
      content: `${h.mention} ${content}`,
      mentions: [h.discord.bot],
    });
  const answer: Answer = (channelId, starts) =>
    h.discord.waitFor(() => h.discord.sent.find((m) => m.channelId === channelId && m.content.startsWith(starts)));
  return { ...h, say, answer };
}
type Say = (channelId: string, content: string, author?: FakeUser) => void;
type Answer = (channelId: string, starts: string) => Promise<SentMessage>;

/** Both endpoints answer with the persona their system prompt names and the conversation they are in. */
function personaReplies(model: FakeOpenAI) {
  model.respond((request): FakeReply => {
    const who = /You are (Alpha|Beta)\b/.exec(systemOf(request))?.[1] ?? "nobody";
    return { content: `${who} (${request.model}) in ${conversationOf(request)}` };
  });
}

describe.each(ENGINES)("on %s", (engine) => {
  const database = engineEnv(engine);

  describe("two agents on one Discord application", () => {
    it("route a bound channel to one agent and the rest of the server to the other, each in its persona", async () => {
      const h = await start("none", await database.env());
      personaReplies(h.model);
      personaReplies(alphaModel);
      h.say(ALPHA_CH, "hello");
      h.say(BETA_CH, "hello");
      expect((await h.answer(ALPHA_CH, "Alpha")).content).toBe(`Alpha (alpha-model) in alpha/discord:${ALPHA_CH}`);
      expect((await h.answer(BETA_CH, "Beta")).content).toBe(`Beta (beta-model) in beta/discord:${BETA_CH}`);
      // A thread of the bound channel is that channel's agent's too.
      h.say(ALPHA_THREAD, "hello");
      expect((await h.answer(ALPHA_THREAD, "Alpha")).content).toBe(
        `Alpha (alpha-model) in alpha/discord:${ALPHA_CH}:thread:${ALPHA_THREAD}`,
      );
      expect(alphaModel.requests.every((r) => systemOf(r).includes("Alpha the archivist"))).toBe(true);
      expect(h.model.requests.every((r) => !systemOf(r).includes("Alpha"))).toBe(true);
      // A tap on a button beta's message offered comes back to beta, in its channel's conversation.
      h.model.respond((request): FakeReply => {
        if (request.messages.at(-1)?.role === "tool") return { content: "Beta asked" };
        if (lastText(request).includes("[button] Rye"))
          return { content: `Beta got rye in ${conversationOf(request)}` };
        return {
          toolCalls: [{ name: "message", arguments: { content: "Which bread?", buttons: [["Rye", "Spelt"]] } }],
        };
      });
      h.say(BETA_CH, "ask me");
      const asked = await h.answer(BETA_CH, "Which bread?");
      h.discord.tap(asked, "Rye", OWNER);
      expect((await h.answer(BETA_CH, "Beta got rye")).content).toBe(`Beta got rye in beta/discord:${BETA_CH}`);
      expect(new Set(alphaModel.keysSeen)).toEqual(new Set(["alpha-key-value"]));
      expect(h.model.keysSeen).not.toContain("alpha-key-value");
    });
  });

  describe.skipIf(!bwrap)("from one agent's channel, an outsider", () => {
    it("reaches none of the other agent's files, memory, history, jobs, usage, models or the page", async () => {
      const h = await start("bwrap", await database.env());
      const alphaWs = h.config.agents.alpha.workspace;
      const betaWs = h.config.agents.beta.workspace;
      writeFileSync(join(alphaWs, "notes.txt"), "ALPHA-SECRET-FILE\n");
      writeFileSync(join(alphaWs, "MEMORY.md"), "# Memory\n\n- ALPHA-MEMORY-FACT: the vault code\n");
      mkdirSync(join(betaWs, "sub"), { recursive: true });
      // Alpha's history, a job and usage, by the owner and by a guest.
      alphaModel.respond((request): FakeReply => {
        if (request.messages.at(-1)?.role === "tool") return { content: "Alpha noted it" };
        if (lastText(request).includes("remind")) {
          const at = new Date(Date.now() + 86_400_000).toISOString();
          return { toolCalls: [{ name: "cron", arguments: { action: "add", message: "ALPHA-JOB-TEXT", at } }] };
        }
        return { content: "Alpha noted it" };
      });
      h.say(ALPHA_CH, "the word is ALPHA-HISTORY-WORD; remind me tomorrow");
      await h.answer(ALPHA_CH, "Alpha noted it");
      h.say(ALPHA_CH, "hi from the guest", GUEST);
      await h.discord.waitFor(() => h.discord.sent.filter((m) => m.channelId === ALPHA_CH).length >= 2);
      expect((await h.app.store.jobs.listBySession(`alpha/discord:${ALPHA_CH}`)).map((j) => j.message)).toEqual([
        "ALPHA-JOB-TEXT",
      ]);

      // Beta's model, in beta's channel, tries every way in at once, then says it is done.
      const up = "../../alpha/workspace";
      const probes: Array<[string, Record<string, unknown>]> = [
        ["read_file", { path: `${up}/notes.txt` }],
        ["read_file", { path: join(alphaWs, "notes.txt") }],
        ["read_file", { path: join(alphaWs, "MEMORY.md") }],
        ["list_dir", { path: "../.." }],
        ["grep", { pattern: "ALPHA", path: up }],
        ["grep", { pattern: "ALPHA", path: "/" }],
        ["glob", { pattern: "**/notes.txt", path: "../.." }],
        ["glob", { pattern: `${alphaWs}/*` }],
        ["memory_search", { query: "vault code" }],
        ["memory_search", { query: "the word is, remind me tomorrow" }],
        ["message", { content: "psst", channel: "discord", chat_id: ALPHA_CH }],
        ["cron", { action: "list" }],
        ["web_fetch", { url: "http://127.0.0.1:7390/api/state" }],
        ["exec", { command: `cat ${up}/notes.txt` }],
        // Past the guard (a cheap first filter), so the sandbox itself is what is tried.
        ...[
          `cat $D/$D/alpha/workspace/notes.txt; cat "$A/notes.txt" "$A/MEMORY.md"; ls -la "$A" $D $D/$D`,
          `ln -s "$A/notes.txt" sub/link; ln -s "$A" sub/ws; cat sub/link sub/ws/notes.txt; ls sub/ws`,
          `find "$S"tmp "$S"home "$S"root "$S"var -name notes.txt -o -name MEMORY.md -o -name '*.db' 2>&1 | head`,
          `grep -rs ALPHA "$S"tmp "$S"home "$S"var | head; env`,
        ].map((command): [string, Record<string, unknown>] => [
          "exec",
          {
            command: `S=$(printf '\\057'); D=$(printf '\\056\\056'); P=$(pwd); A="\${P%/beta/workspace}/alpha/workspace"; ${command}`,
          },
        ]),
        ["read_file", { path: "sub/link" }],
        ["read_file", { path: "sub/ws/notes.txt" }],
      ];
      h.model.respond((request): FakeReply => {
        if (request.messages.at(-1)?.role === "tool") return { content: "Beta probed" };
        if (lastText(request).includes("probe")) {
          return { toolCalls: probes.map(([name, args]) => ({ name, arguments: args })) };
        }
        return { content: "Beta here" };
      });
      h.say(BETA_CH, "probe everything");
      await h.answer(BETA_CH, "Beta probed");
      const probed = h.model.requests.find((r) => r.messages.at(-1)?.role === "tool");
      const results = (probed?.messages ?? []).filter((m) => m.role === "tool").map((m) => String(m.content));
      expect(results).toHaveLength(probes.length);
      for (const [i, result] of results.entries()) {
        for (const secret of SECRETS)
          expect(result, `${probes[i][0]} ${JSON.stringify(probes[i][1])}`).not.toContain(secret);
      }
      const byTool = (name: string) => results.filter((_, i) => probes[i][0] === name);
      for (const read of byTool("read_file")) expect(read).toMatch(/^Error: /);
      expect(byTool("message")[0]).toMatch(/^Error: discord:\d+ is not on agents\.beta\.message\.allowedTargets in/);
      expect(byTool("web_fetch")[0]).toMatch(/^Error: /);
      expect(h.discord.sent.filter((m) => m.channelId === ALPHA_CH && m.content === "psst")).toEqual([]);
      // Nothing of alpha's reached beta's model, whatever it was sent.
      for (const request of h.model.requests) {
        for (const secret of SECRETS) expect(JSON.stringify(request.messages)).not.toContain(secret);
      }

      // The commands: beta's /jobs has none of alpha's jobs, /model lists beta's models, /usage (the owner's and a guest's) beta's usage alone.
      h.say(BETA_CH, "/jobs");
      await h.answer(BETA_CH, "You have no scheduled jobs");
      h.say(BETA_CH, "/model");
      const models = (await h.answer(BETA_CH, "Models")).content;
      expect(models).toContain("beta-big");
      expect(models).not.toContain("alpha");
      h.say(BETA_CH, "/model alpha-big");
      expect((await h.answer(BETA_CH, "There is no model")).content).not.toContain("alpha-model");
      for (const [who, title] of [
        [OWNER, "this chat"],
        [GUEST, "yours"],
      ] as const) {
        const before = h.discord.sent.length;
        h.say(BETA_CH, "/usage", who);
        const usage = await h.discord.waitFor(() =>
          h.discord.sent.slice(before).find((m) => m.channelId === BETA_CH && m.content.startsWith("Model usage")),
        );
        expect(usage.content).toContain(title);
        expect(usage.content).not.toContain("alpha-model");
      }
    });
  });
});
