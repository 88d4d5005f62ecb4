import { afterEach, describe, expect, it } from "vitest";
import type { FakeUser } from "./fakes/discord-server.js";
import type { ChatRequest } from "./fakes/openai-server.js";
import { startDiscordHarness } from "./helpers/discord.js";

/** Progress notes and the message tool on Discord: real discord.js against the fake REST + gateway. */

const ALICE: FakeUser = { id: "200000000000000001", username: "alice" };
const DM = "140000000000000001";
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const clean of cleanups.splice(0).reverse()) await clean();
});

const start = () =>
  startDiscordHarness(cleanups, {
    allowFrom: ALICE.id,
    adjust: (config) => {
      config.agent.modelRetries = 0;
      config.progress.afterSeconds = 0.2;
    },
    tuning: { typingIntervalMs: 100 },
  });

function toolResult(requests: ChatRequest[], id: string): string | undefined {
  for (const r of requests) {
    const found = r.messages.find((m) => m.role === "tool" && m.tool_call_id === id);
    if (found) return String(found.content);
  }
  return undefined;
}

describe("Discord: progress notes and the message tool", () => {
  it("edits one progress note in place and deletes it when the answer comes", async () => {
    const { discord, model } = await start();
    model.enqueue(
      { toolCalls: [{ name: "exec", arguments: { command: "sleep 0.6; echo one" } }] },
      { toolCalls: [{ name: "exec", arguments: { command: "sleep 0.6; echo two" } }] },
      { content: "All done." },
    );
    discord.dispatchMessage({ channelId: DM, author: ALICE, content: "run both" });
    await discord.waitFor(() => discord.sent.find((m) => m.content === "All done."), 10_000);
    const note = await discord.waitFor(() => discord.sent.find((m) => m.content.startsWith("⏳") && m.deleted));
    expect(note.content).toBe("⏳ Working: exec `sleep 0.6; echo one`");
    expect(note.edits).toEqual(["⏳ Working: exec `sleep 0.6; echo two`"]);
    expect(discord.sent.filter((m) => m.content.startsWith("⏳"))).toHaveLength(1);
  });

  it("returns Discord's message id, or Discord's refusal", async () => {
    const { discord, model } = await start();
    model.enqueue(
      { toolCalls: [{ name: "message", arguments: { content: "first note" }, id: "c1" }] },
      { content: "ok" },
    );
    discord.dispatchMessage({ channelId: DM, author: ALICE, content: "note please" });
    const result = await discord.waitFor(() => toolResult(model.requests, "c1"));
    const sent = discord.sent.find((m) => m.content === "first note");
    expect(result).toBe(`Sent to discord:${DM} (message id ${sent?.id}).`);

    await discord.waitFor(() => discord.sent.find((m) => m.content === "ok"));
    discord.failNext({ method: "POST", path: /\/messages$/, status: 403 });
    model.enqueue(
      { toolCalls: [{ name: "message", arguments: { content: "second note" }, id: "c2" }] },
      { content: "ok again" },
    );
    discord.dispatchMessage({ channelId: DM, author: ALICE, content: "another" });
    const refused = await discord.waitFor(() => toolResult(model.requests, "c2"));
    expect(refused).toMatch(/^Error: Discord refused it: .*fake failure 403.*Nothing was delivered/);
  });
});
