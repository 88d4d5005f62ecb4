import { describe, expect, it } from "vitest";
import type { InboundMessage, PersonMessage } from "../bus/types.js";
import type { ModelSetting } from "../config/file-schema.js";
import { chatOf, createChatModels, findModel, modelList } from "./model-choice.js";

const models: ModelSetting[] = [
  { name: "gpt-4.1-mini", label: "Mini" },
  { name: "qwen2.5:7b", baseUrl: "http://127.0.0.1:11434/v1", label: "Fast local" },
  { name: "gpt-4o" },
];

const msg = (text: string, senderId = "42", extra: Partial<PersonMessage> = {}): InboundMessage => ({
  id: "1",
  channel: "telegram",
  chatId: "-100",
  senderId,
  senderName: "x",
  text,
  media: [],
  isGroup: true,
  mentionsBot: true,
  receivedAt: 0,
  sessionKey: "telegram:-100",
  ...extra,
});

function chatModels(owners = ["42"]) {
  const rows = new Map<string, string>();
  const chains: Array<string | undefined> = [];
  const made = createChatModels({
    config: { openai: { model: "gpt-4.1-mini" }, agent: { models } },
    store: {
      get: async (key) => rows.get(key),
      set: async (key, model) => void (model === undefined ? rows.delete(key) : rows.set(key, model)),
    },
    access: { mayChooseModel: (msg) => owners.includes(msg.senderId) },
    chain: (choice) => {
      chains.push(choice);
      return { model: { complete: async () => ({ content: "", toolCalls: [] }) }, window: () => 1000 };
    },
  });
  return { made, rows, chains };
}

describe("choosing a chat's model", () => {
  it("finds a model by name or label in any case; default is the default", () => {
    expect(findModel(models, " fast LOCAL ")?.valueOf()).toEqual(models[1]);
    expect(findModel(models, "GPT-4O")).toEqual(models[2]);
    expect(findModel(models, "Default")).toBe("default");
    expect(findModel(models, "gpt-5")).toBeUndefined();
  });

  it("lists the default first and marks this chat's model", () => {
    const text = modelList("gpt-4.1-mini", models, "gpt-4o");
    expect(text.split("\n").slice(1)).toEqual([
      "- Mini (`gpt-4.1-mini`), the default",
      "- Fast local (`qwen2.5:7b`)",
      "- `gpt-4o`  ← this chat",
    ]);
    expect(modelList("gpt-4.1-mini", [], "gpt-4.1-mini")).toMatch(/only model configured.*agent\.models/);
  });

  it("the owner switches, and back to the default; the turn gets the chosen chain", async () => {
    const { made, rows, chains } = chatModels();
    expect(await made.answer(msg("/model fast local"), "fast local")).toBe(
      "This chat uses Fast local (`qwen2.5:7b`) from the next message on.",
    );
    expect(rows.get("telegram:-100")).toBe("qwen2.5:7b");
    expect((await made.forTurn(msg("hi"))).name).toBe("qwen2.5:7b");
    expect(await made.current(msg("hi"))).toEqual({ name: "qwen2.5:7b", chosen: true });
    expect(await made.answer(msg("/model default"), "default")).toMatch(/back on the default model, gpt-4.1-mini/);
    expect(rows.size).toBe(0);
    await made.forTurn(msg("hi"));
    expect(chains).toEqual(["qwen2.5:7b", undefined]);
  });

  it("a group member who is no owner is refused and the choice stays; an unknown name gets the owner the list", async () => {
    const { made, rows } = chatModels();
    const refused = await made.answer(msg("/model gpt-4o", "7"), "gpt-4o");
    expect(refused).toMatch(/^Only the owner can switch.*TELEGRAM_ALLOW_FROM.*stays on gpt-4.1-mini\.$/);
    expect(rows.size).toBe(0);
    const unknown = await made.answer(msg("/model gpt-5"), `gpt-5${"x".repeat(500)}`);
    expect(unknown).toMatch(/^There is no model "gpt-5x{55}" here\.\nModels/);
    expect(rows.size).toBe(0);
    // A guest has no /model at all (docs/security.md, "Who sees what"), not even the list; the owner has.
    expect(await made.answer(msg("/model", "7"), "")).toMatch(/^Only the owner can switch/);
    expect(await made.answer(msg("/model"), "")).toMatch(/^Models/);
  });

  it("a choice the config no longer lists, or a database that cannot say, runs on the default", async () => {
    const { made, rows } = chatModels();
    rows.set("telegram:-100", "llama-gone");
    expect((await made.forTurn(msg("hi"))).name).toBe("gpt-4.1-mini");
    const broken = createChatModels({
      config: { openai: { model: "gpt-4.1-mini" }, agent: { models } },
      store: { get: () => Promise.reject(new Error("database is locked")), set: async () => {} },
      access: { mayChooseModel: () => true },
      chain: () => ({ model: { complete: async () => ({ content: "", toolCalls: [] }) }, window: () => 1 }),
    });
    expect((await broken.forTurn(msg("hi"))).name).toBe("gpt-4.1-mini");
  });

  it("the heartbeat uses the choice of the chat it reports to", () => {
    const run = { kind: "heartbeat", deliverTo: "telegram:42", silentReply: "OK" } as const;
    expect(chatOf({ ...msg("x", "heartbeat"), channel: "system", sessionKey: "system:heartbeat", run })).toBe(
      "telegram:42",
    );
    expect(chatOf(msg("x"))).toBe("telegram:-100");
  });
});
