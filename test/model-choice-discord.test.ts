import { afterEach, describe, expect, it } from "vitest";
import type { FakeUser } from "./fakes/discord-server.js";
import type { ChatRequest, FakeReply } from "./fakes/openai-server.js";
import { startDiscordHarness } from "./helpers/discord.js";

/** `/model` per chat on Discord: real discord.js against the fake REST + gateway and the fake model. */

const OWNER: FakeUser = { id: "200000000000000001", username: "alice" };
const MEMBER: FakeUser = { id: "200000000000000002", username: "bob" };
const GUILD = { id: "300000000000000001", name: "Team", channels: [{ id: "310000000000000001", name: "general" }] };
const CHANNEL = GUILD.channels[0].id;
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const clean of cleanups.splice(0).reverse()) await clean();
});

const lastText = (r: ChatRequest) => String(r.messages.at(-1)?.content ?? "");

describe("/model on Discord", () => {
  it("a server member let in by * is refused; the owner's switch reaches the model, the chat's reminder too", async () => {
    const { discord, model, mention, app } = await startDiscordHarness(cleanups, {
      allowFrom: `${OWNER.id},*`,
      fake: { guilds: [GUILD] },
      adjust: (config) => {
        config.agent.modelRetries = 0;
        config.agent.models = [{ name: "big-model" }, { name: "local-model", baseUrl: "http://127.0.0.1:9/v1" }];
      },
    });
    model.respond((request): FakeReply => {
      const last = request.messages.at(-1);
      if (last?.role === "tool") return { content: `${request.model} set it` };
      if (lastText(request).includes("is due now")) return { content: `${request.model} reminds you` };
      if (lastText(request).includes("remind")) {
        const at = new Date(Date.now() + 1500).toISOString();
        return { toolCalls: [{ name: "cron", arguments: { action: "add", message: "stretch", at } }] };
      }
      return { content: `${request.model} says hi` };
    });
    const say = (author: FakeUser, content: string) =>
      discord.dispatchMessage({ channelId: CHANNEL, guildId: GUILD.id, author, content, mentions: [discord.bot] });
    const answer = (starts: string) =>
      discord.waitFor(() => discord.sent.find((m) => m.channelId === CHANNEL && m.content.startsWith(starts)), 15_000);

    say(MEMBER, `${mention} /model big-model`);
    expect((await answer("Only the owner")).content).toContain("DISCORD_ALLOW_FROM");
    say(OWNER, `${mention} /model nope`);
    expect((await answer("There is no model")).content).toContain("big-model");
    say(OWNER, `${mention} /model Big-Model`);
    await answer("This chat uses `big-model`");
    say(MEMBER, `${mention} hello`);
    await answer("big-model says hi");
    say(OWNER, `${mention} remind me to stretch`);
    await answer("big-model set it");
    await answer("big-model reminds you");
    const reminder = model.requests.find((r) => lastText(r).includes("is due now"));
    expect(reminder?.model).toBe("big-model");
    expect(model.requests.some((r) => r.model !== "big-model")).toBe(false);
    // Counted under the model that answered, for /usage.
    const counted = () => app.store.usage.groups(0, 0, `discord:${CHANNEL}`);
    await discord.waitFor(async () => (await counted()).some((g) => g.kind !== "conversation"));
    expect(new Set((await counted()).map((g) => `${g.kind} ${g.model}`))).toEqual(
      new Set(["conversation big-model", "reminder big-model"]),
    );
  });
});
