import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { ChatRequest, FakeReply } from "./fakes/openai-server.js";
import { tempHome } from "./helpers/app.js";
import { gatewayOnFakes, stopDaemon, USER } from "./helpers/daemon.js";

/**
 * `/model` per chat on the built daemon (`pincer gateway`) with the real grammy client against the
 * fake Bot API and the fake model: who may switch, what the model is asked for, across a restart,
 * the fallback behind the chosen model, and helpers left on agent.helperModel.
 */

const fakes = gatewayOnFakes({ TELEGRAM_ALLOW_FROM: `${USER},*` });
const { model, gateway, until } = fakes;
const GROUP = -100123;
const MEMBER = 77;

const isHelper = (r: ChatRequest) => String(r.messages[0]?.content).startsWith("You are a background helper");
const lastText = (r: ChatRequest) => String(r.messages.at(-1)?.content ?? "");

/** A message in the group, where `*` lets everyone talk but only USER (named in the allowlist) owns the bot. */
function inGroup(text: string, from = USER): void {
  fakes.telegram.pushUpdate({
    message: {
      message_id: 0,
      date: 0,
      chat: { id: GROUP, type: "supergroup", title: "Team" },
      from: { id: from, is_bot: false, first_name: from === USER ? "Ada" : "Bob" },
      text,
    },
  });
}

const sentToGroup = (starts: string) =>
  until(() => fakes.telegram.sent.find((m) => m.chatId === String(GROUP) && m.text.startsWith(starts)), starts);

describe("/model on Telegram, the built daemon", () => {
  it("switches a group for its owner only, keeps the choice across a restart, falls back behind it; helpers keep theirs", async () => {
    const home = tempHome();
    writeFileSync(
      join(home, "config.json"),
      JSON.stringify({
        agent: {
          modelRetries: 0,
          models: [{ name: "big-model", label: "Big" }, { name: "small-model" }],
          fallbackModels: ["spare-model"],
          helperModel: "helper-model",
        },
      }),
    );
    model.respond((request): FakeReply => {
      if (isHelper(request)) return { content: "helper notes" };
      if (request.messages.at(-1)?.role === "tool") return { content: `${request.model} started a helper` };
      if (lastText(request).includes("Background helper")) return { content: `${request.model} read the helper` };
      if (lastText(request).includes("research")) {
        return { toolCalls: [{ name: "spawn", arguments: { task: "research bees", label: "bees" } }] };
      }
      if (request.model === "big-model" && lastText(request).includes("fail")) return { status: 503 };
      return { content: `${request.model} says hi` };
    });
    const first = gateway(home);

    inGroup("/model big", MEMBER);
    const refused = await sentToGroup("Only the owner can switch");
    expect(refused.text).toContain("TELEGRAM_ALLOW_FROM");
    inGroup("@pincer_test_bot hello", MEMBER);
    await sentToGroup("gpt-4.1-mini says hi");

    inGroup("/model@pincer_test_bot BIG");
    await sentToGroup("This chat uses Big (big-model)");
    inGroup("@pincer_test_bot hello again");
    await sentToGroup("big-model says hi");
    // Another chat stays on the default.
    fakes.say("hi in private");
    await until(() => fakes.telegram.sent.find((m) => m.chatId === String(USER) && m.text.includes("says hi")), "dm");
    expect(fakes.telegram.sent.find((m) => m.chatId === String(USER))?.text).toBe("gpt-4.1-mini says hi");

    expect(await stopDaemon(first)).toBe(0);
    model.requests.length = 0;
    gateway(home);
    inGroup("/status");
    const status = await sentToGroup("Model:");
    expect(status.text.split("\n")[0]).toBe("Model: big-model (this chat's choice; the default is gpt-4.1-mini)");
    inGroup("/model");
    const list = await sentToGroup("Models");
    expect(list.text).toMatch(/^. Big \(big-model\) {2}← this chat$/m);

    inGroup("@pincer_test_bot this will fail");
    await sentToGroup("spare-model says hi");
    const failing = model.requests.filter((r) => lastText(r).includes("fail")).map((r) => r.model);
    expect(failing).toEqual(["big-model", "spare-model"]);

    inGroup("@pincer_test_bot research bees for me");
    await sentToGroup("big-model started a helper");
    await sentToGroup("big-model read the helper");
    expect(model.requests.filter(isHelper).map((r) => r.model)).toEqual(["helper-model"]);

    inGroup("/model default");
    await sentToGroup("This chat is back on the default model, gpt-4.1-mini");
    inGroup("@pincer_test_bot and now?");
    await until(() => model.requests.find((r) => lastText(r).includes("and now?")), "the next turn");
    expect(model.requests.find((r) => lastText(r).includes("and now?"))?.model).toBe("gpt-4.1-mini");
  });

  it("stops the start with one sentence naming a bad agent.models entry", async () => {
    const home = tempHome();
    writeFileSync(join(home, "config.json"), JSON.stringify({ agent: { models: [{ name: "a" }, { name: "A" }] } }));
    const daemon = gateway(home);
    const code = await new Promise((resolve) => daemon.once("exit", resolve));
    expect(code).not.toBe(0);
    const output = daemon.output.join("");
    expect(output).toMatch(/agent\.models "a" names two models/);
    expect(output).not.toMatch(/\n\s+at /);
  });
});
