/**
 * The endpoint's real context: learned up front (llama-server's /props, /v1/models metadata) or
 * from a refusal in the server's own words, every request fitted to it, remembered across a
 * restart; and one clear sentence when even the fixed prompt cannot fit. The real openai client
 * against the scripted server, which counts tokens its own way (more than pincer does).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it, onTestFinished } from "vitest";
import type { App } from "../src/app.js";
import type { Config } from "../src/config/config.js";
import { recordingChannel, tempHome, testApp, userMessage } from "./helpers/app.js";
import { fakeModelForFile } from "./helpers/model.js";
import { until } from "./helpers/until.js";

const fake = fakeModelForFile();
const apps: App[] = [];

afterEach(async () => {
  fake.limitContext(undefined);
  fake.serveProps(undefined);
  for (const id of Object.keys(fake.modelInfo)) delete fake.modelInfo[id];
  for (const app of apps.splice(0)) await app.stop();
});

async function started(home: string, adjust?: (config: Config) => void) {
  const app = await testApp(fake.url, home, {}, adjust);
  apps.push(app);
  const channel = recordingChannel(app);
  await app.start([channel]);
  return { app, channel };
}

/** A long message of varied words (about 4.5 characters a token for pincer's counter). */
function longText(words: number): string {
  return Array.from({ length: words }, (_, i) => `item${i % 97} about plan ${i}`).join(" ");
}

function remembered(home: string): Record<string, { tokens: number; source: string }> {
  return JSON.parse(readFileSync(join(home, "context-windows.json"), "utf8"));
}

/** The turns' requests (they offer tools), not memory consolidation's. */
const turnRequests = () => fake.requests.filter((r) => (r.tools?.length ?? 0) > 0);

const ENDPOINT = () => `gpt-4.1-mini at ${fake.url}`;

describe("the endpoint's context", () => {
  it("is read from llama-server's /props before the first turn, which fits it at once", async () => {
    fake.serveProps({ default_generation_settings: { n_ctx: 8192 }, total_slots: 1 });
    fake.limitContext(8192);
    const home = tempHome();
    const { app, channel } = await started(home);
    await app.bus.publishInbound(userMessage("p", longText(6000)));
    await channel.waitFor(1);
    expect(channel.sent[0].text).toBe("ok");
    expect(fake.requests).toHaveLength(1);
    expect(fake.requests[0].promptTokens).toBeLessThanOrEqual(8192);
    expect(String(fake.requests[0].messages.at(-1)?.content)).toContain("cut to fit the context budget");
    expect(remembered(home)[ENDPOINT()]).toMatchObject({ tokens: 8192, source: "props" });
    await app.bus.publishInbound(userMessage("p", "/status"));
    await channel.waitFor(2);
    expect(channel.sent[1].text).toContain("Context: 8,192 tokens (the model server's; agent.contextTokens is 32,000)");
  });

  it("is read from vLLM's max_model_len in /v1/models", async () => {
    fake.modelInfo["gpt-4.1-mini"] = { max_model_len: 8192 };
    fake.limitContext(8192, "vllm");
    const home = tempHome();
    const { app, channel } = await started(home);
    await app.bus.publishInbound(userMessage("v", longText(6000)));
    await channel.waitFor(1);
    expect(channel.sent[0].text).toBe("ok");
    // vLLM counts max_tokens in, and the fake counts more than pincer: before the first usage
    // calibrates the counter, a request filled to the brim may be refused once.
    expect(fake.requests.length).toBeLessThanOrEqual(2);
    expect(remembered(home)[ENDPOINT()]).toMatchObject({ tokens: 8192, source: "models" });
  });

  for (const style of ["llama.cpp", "vllm"] as const) {
    it(`is learned from a ${style} refusal: asked again at once, fitted; later turns and a restart know it`, async () => {
      fake.limitContext(8192, style);
      const home = tempHome();
      const first = await started(home);
      await first.app.bus.publishInbound(userMessage("r", longText(6000)));
      await first.channel.waitFor(1);
      expect(first.channel.sent[0]).toMatchObject({ kind: "reply", text: "ok" });
      // Refused once (pincer asked for its default 32,000), then sent fitted to the server's size.
      expect(turnRequests().map((r) => r.promptTokens > 8192)).toEqual([true, false]);
      expect(remembered(home)[ENDPOINT()]).toMatchObject({ tokens: 8192, source: "refusal" });

      // The long message is history now: the next turn fits without a refusal.
      await first.app.bus.publishInbound(userMessage("r", `and now? ${longText(300)}`));
      await first.channel.waitFor(2);
      expect(turnRequests()).toHaveLength(3);
      await first.app.stop();

      const second = await started(home);
      await second.app.bus.publishInbound(userMessage("s", longText(6000)));
      await second.channel.waitFor(1);
      expect(second.channel.sent[0].text).toBe("ok");
      // A fresh start has an uncalibrated counter: vLLM, counting max_tokens in, may refuse once
      // more where our estimate falls below the server's count.
      expect(turnRequests().length).toBeGreaterThanOrEqual(4);
      expect(turnRequests().length).toBeLessThanOrEqual(style === "vllm" ? 5 : 4);
      // Everything after the one refusal fitted.
      expect(fake.requests.slice(1).filter((r) => r.promptTokens > 8192)).toEqual([]);
    });
  }

  it("a refusal without numbers (older llama.cpp's 500) is no outage: asked again at once, smaller", async () => {
    const words = "the request exceeds the available context size, try increasing it";
    fake.enqueue({ status: 500, body: { error: { code: 500, message: words, type: "server_error" } } });
    const { app, channel } = await started(tempHome());
    await app.bus.publishInbound(userMessage("o", longText(6000)));
    await channel.waitFor(1);
    expect(channel.sent[0]).toMatchObject({ kind: "reply", text: "ok" });
    const [refused, retried] = turnRequests();
    expect(retried.promptTokens).toBeLessThan(refused.promptTokens * 0.8);
  });

  it("a server restarted with a bigger context is believed at the next start", async () => {
    fake.limitContext(8192);
    const home = tempHome();
    const first = await started(home);
    await first.app.bus.publishInbound(userMessage("b", "hello"));
    await first.channel.waitFor(1);
    await first.app.bus.publishInbound(userMessage("b", longText(6000)));
    await first.channel.waitFor(2);
    expect(remembered(home)[ENDPOINT()].tokens).toBe(8192);
    await first.app.stop();

    fake.limitContext(16384);
    fake.serveProps({ default_generation_settings: { n_ctx: 16384 } });
    const second = await started(home);
    await second.app.bus.publishInbound(userMessage("c", longText(12000)));
    await second.channel.waitFor(1);
    expect(remembered(home)[ENDPOINT()]).toMatchObject({ tokens: 16384, source: "props" });
    const last = fake.requests.at(-1);
    expect(last?.promptTokens).toBeGreaterThan(8192);
    expect(last?.promptTokens).toBeLessThanOrEqual(16384);
  });

  it("too small for the fixed prompt: one sentence naming agent.contextTokens and the biggest tools; the chat goes on", async () => {
    fake.limitContext(2048);
    const home = tempHome();
    const { app, channel } = await started(home);
    await app.bus.publishInbound(userMessage("t", "hello"));
    await channel.waitFor(1);
    const [answer] = channel.sent;
    expect(answer.kind).toBe("notice");
    expect(answer.text).toMatch(
      /^I cannot answer: .*model server takes only 2,048 tokens \(agent\.contextTokens is 32,000\)/,
    );
    expect(answer.text).toMatch(/agent\.disabledTools, the biggest being \w+ \(\d+\), \w+ \(\d+\)/);
    expect(answer.text.split(". ").length).toBe(1);
    expect(fake.requests).toHaveLength(1);

    // Not stuck: the next message is answered at once. It costs one refused request, which is how
    // pincer finds out whether the server was restarted bigger (this server tells nothing up front).
    await app.bus.publishInbound(userMessage("t", "hello again"));
    await channel.waitFor(2);
    expect(channel.sent[1].text).toMatch(/^I cannot answer/);
    expect(fake.requests.map((r) => r.promptTokens > 2048)).toEqual([true, true]);
    await until(async () => (await app.store.journal.pendingInbound()).length === 0, "nothing left waiting");
  });

  for (const told of ["by /props", "by its refusal"]) {
    it(`a model server restarted with a bigger context while pincer runs is found by the next message (told ${told})`, async () => {
      const props = (n_ctx: number) => told === "by /props" && fake.serveProps({ n_ctx });
      props(2048);
      fake.limitContext(2048);
      const { app, channel } = await started(tempHome());
      await app.bus.publishInbound(userMessage("g", "hello"));
      await channel.waitFor(1);
      expect(channel.sent[0].text).toMatch(/^I cannot answer/);
      await app.bus.publishInbound(userMessage("g", "still there?"));
      await channel.waitFor(2);
      expect(channel.sent[1].text).toMatch(/^I cannot answer/);

      props(8192);
      fake.limitContext(8192);
      await app.bus.publishInbound(userMessage("g", "and now?"));
      await channel.waitFor(3);
      expect(channel.sent[2]).toMatchObject({ kind: "reply", text: "ok" });
      // While it was small, a message cost at most one refused request (none when /props told).
      expect(turnRequests().length).toBeLessThanOrEqual(told === "by /props" ? 1 : 3);
    });
  }

  it("names raising agent.contextTokens when that is what limits the window", async () => {
    const { app, channel } = await started(tempHome(), (c) => {
      c.agent.contextTokens = 1000;
    });
    await app.bus.publishInbound(userMessage("u", "hello"));
    await channel.waitFor(1);
    expect(channel.sent[0].text).toMatch(/agent\.contextTokens is 1,000, so raise it/);
    expect(fake.requests).toHaveLength(0);
  });

  it("agent.disabledTools leaves tools out of every request", async () => {
    const { app, channel } = await started(tempHome(), (c) => {
      c.agent.disabledTools = ["exec", "cron", "web_fetch"];
    });
    await app.bus.publishInbound(userMessage("d", "hello"));
    await channel.waitFor(1);
    const offered = fake.requests[0].tools?.map((t) => t.function.name) ?? [];
    expect(offered).toContain("read_file");
    expect(offered).not.toContain("exec");
    expect(offered).not.toContain("cron");
    expect(offered).not.toContain("web_fetch");
  });

  it("a chat on a model of agent.models is fitted to that model's context, another chat to the default's", async () => {
    fake.models.push("small-ctx");
    onTestFinished(() => void fake.models.pop());
    fake.modelInfo["small-ctx"] = { max_model_len: 8192 };
    const { app, channel } = await started(tempHome(), (config) => {
      config.agent.models = [{ name: "small-ctx" }];
    });
    await app.bus.publishInbound(userMessage("small", "/model small-ctx"));
    await channel.waitFor(1);
    expect(channel.sent[0].text).toBe("This chat uses `small-ctx` from the next message on.");
    await app.bus.publishInbound(userMessage("small", longText(2000)));
    await app.bus.publishInbound(userMessage("big", longText(2000)));
    await channel.waitFor(3);
    const [small, big] = ["small-ctx", "gpt-4.1-mini"].map((name) => turnRequests().find((r) => r.model === name));
    expect(small?.promptTokens).toBeLessThanOrEqual(8192);
    expect(String(small?.messages.at(-1)?.content)).toContain("cut to fit the context budget");
    expect(big?.promptTokens).toBeGreaterThan(8192);
    expect(String(big?.messages.at(-1)?.content)).not.toContain("cut to fit");
  });
});
