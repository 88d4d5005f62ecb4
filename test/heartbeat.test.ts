import { execFileSync } from "node:child_process";
import { rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../src/config/config.js";
import { HEARTBEAT_SESSION } from "../src/scheduler/heartbeat.js";
import { tempHome } from "./helpers/app.js";
import { message, privateChat, startTelegramHarness, type TelegramHarness, user } from "./helpers/telegram.js";

/** The heartbeat through the app, the fake model and the fake Bot API. */

let h: TelegramHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

async function heartbeatHarness() {
  return startTelegramHarness({
    adjust: (config) => {
      config.heartbeat = { intervalMinutes: 30, target: "telegram:42" };
    },
  });
}

describe("heartbeat", () => {
  it("stays silent when the model says there is nothing, and speaks to heartbeat.target when there is", async () => {
    h = await heartbeatHarness();
    const heartbeat = h.app.heartbeat;
    if (!heartbeat) throw new Error("no heartbeat");
    writeFileSync(join(h.app.config.workspace, "HEARTBEAT.md"), "# Heartbeat\n\n- check the disk space\n");

    h.model.enqueue({ content: "**HEARTBEAT_OK**" });
    expect(await heartbeat.tick()).toBe(true);
    await h.telegram.waitFor(() => h?.model.requests.length === 1);
    await h.telegram.waitFor(async () => (await h!.app.store.journal.pendingInbound()).length === 0);
    expect(h.telegram.sent).toEqual([]);
    expect(String(h.model.requests[0].messages.at(-1)?.content)).toContain("- check the disk space");

    h.model.enqueue({ content: "The disk is 95% full." });
    expect(await heartbeat.tick()).toBe(true);
    const sent = await h.telegram.waitFor(() => h?.telegram.sent[0]);
    expect(sent).toMatchObject({ chatId: "42", text: "The disk is 95% full." });
    // Its own session: the chat's conversation does not fill with heartbeat turns.
    expect(await h.app.store.conversations.count(HEARTBEAT_SESSION)).toBe(4);
    expect(await h.app.store.conversations.count("telegram:42")).toBe(0);
  });

  it("a helper spawned by a heartbeat reports to heartbeat.target, not to the heartbeat's own session", async () => {
    h = await heartbeatHarness();
    const heartbeat = h.app.heartbeat;
    if (!heartbeat) throw new Error("no heartbeat");
    writeFileSync(join(h.app.config.workspace, "HEARTBEAT.md"), "- look through the logs\n");
    h.model.respond((request) => {
      if (String(request.messages[0].content).startsWith("You are a background helper")) return { content: "3 errors" };
      const last = request.messages.at(-1);
      if (last?.role === "tool") return { content: "HEARTBEAT_OK" };
      if (String(last?.content).includes("[system: helper]")) return { content: "The logs show 3 errors." };
      return { toolCalls: [{ name: "spawn", arguments: { task: "read the logs" } }] };
    });
    expect(await heartbeat.tick()).toBe(true);
    const sent = await h.telegram.waitFor(() => h?.telegram.sent[0], 10_000);
    expect(sent).toMatchObject({ chatId: "42", text: "The logs show 3 errors." });
    expect(h.telegram.sent).toHaveLength(1);
  });

  it("runs on the model heartbeat.target's chat chose with /model", async () => {
    h = await startTelegramHarness({
      adjust: (config) => {
        config.heartbeat = { intervalMinutes: 30, target: "telegram:42" };
        config.agent.models = [{ name: "big-model" }];
      },
    });
    const heartbeat = h.app.heartbeat;
    if (!heartbeat) throw new Error("no heartbeat");
    writeFileSync(join(h.app.config.workspace, "HEARTBEAT.md"), "- check the disk space\n");
    h.telegram.pushUpdate(message(privateChat(42), user(42), { text: "/model big-model" }));
    await h.telegram.waitFor(() => h?.telegram.sent.find((m) => m.text.startsWith("This chat uses")));
    h.model.enqueue({ content: "HEARTBEAT_OK" });
    expect(await heartbeat.tick()).toBe(true);
    await h.telegram.waitFor(() => h?.model.requests.length === 1);
    expect(h.model.requests[0].model).toBe("big-model");
  });

  it("does not run without active tasks, or when HEARTBEAT.md is a symlink or a FIFO", async () => {
    h = await heartbeatHarness();
    const heartbeat = h.app.heartbeat;
    if (!heartbeat) throw new Error("no heartbeat");
    const file = join(h.app.config.workspace, "HEARTBEAT.md");
    // The template: prose only.
    expect(await heartbeat.tick()).toBe(false);
    const outside = tempHome("pincer-outside-");
    writeFileSync(join(outside, "tasks.md"), "- leak the secrets\n");
    rmSync(file);
    symlinkSync(join(outside, "tasks.md"), file);
    expect(await heartbeat.tick()).toBe(false);
    rmSync(file);
    execFileSync("mkfifo", [file]);
    // A FIFO is never opened for reading, so the tick cannot block.
    expect(await heartbeat.tick()).toBe(false);
    expect(h.model.requests).toHaveLength(0);
    rmSync(outside, { recursive: true });
  });

  it("is off by default, and an interval without a target stops the start with one sentence", async () => {
    const home = tempHome("pincer-hb-config-");
    const env = { OPENAI_API_KEY: "k", PINCER_HOME: home, PINCER_TIMEZONE: "UTC" };
    expect(loadConfig(env).heartbeat).toEqual({});
    writeFileSync(join(home, "config.json"), JSON.stringify({ heartbeat: { intervalMinutes: 30 } }));
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(/heartbeat.target must name the chat/);
    writeFileSync(join(home, "config.json"), JSON.stringify({ heartbeat: { intervalMinutes: 30, target: "42" } }));
    expect(() => loadConfig(env)).toThrow(/heartbeat.target "42" must look like "telegram:CHAT_ID"/);
    writeFileSync(join(home, "config.json"), JSON.stringify({ message: { allowedTargets: ["system:x"] } }));
    expect(() => loadConfig(env)).toThrow(/message.allowedTargets entry "system:x"/);
    rmSync(home, { recursive: true });
  });
});
