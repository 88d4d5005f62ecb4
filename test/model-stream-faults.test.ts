import { afterEach, describe, expect, it } from "vitest";
import type { App } from "../src/app.js";
import type { ChatRequest } from "./fakes/openai-server.js";
import { startedRecording, tempHome, userMessage } from "./helpers/app.js";
import { fakeModelForFile } from "./helpers/model.js";
import { until } from "./helpers/until.js";

// A stream that breaks or stalls part-way, met the way a user meets it: through the app and its chat.
const fake = fakeModelForFile();
const lastUser = (request: ChatRequest) => String(request.messages.filter((m) => m.role === "user").at(-1)?.content);
const asked = (text: string) => fake.requests.filter((r) => lastUser(r) === text).length;
const event = (content: string) =>
  `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 0, model: "m", choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`;

let apps: App[] = [];
afterEach(async () => {
  await Promise.all(apps.map((app) => app.stop()));
  apps = [];
  fake.clearQueue();
});

const started = () =>
  startedRecording(fake.url, apps, tempHome(), (config) => {
    config.agent.stream = true;
    config.agent.modelRetries = 0;
  });

describe("a stream that breaks part-way", () => {
  it("is asked again: the user gets the whole answer once, none of the half one", async () => {
    fake.respond((request) => ({ content: `re: ${lastUser(request)}` }));
    fake.enqueue({ sse: [event("half an ans"), "CLOSE"] });
    const ctx = await started();
    await ctx.app.bus.publishInbound(userMessage("c", "question"));
    await ctx.settled();
    // One failed try says nothing (the outage notice comes on the second).
    expect(ctx.to("c")).toEqual(["re: question"]);
    expect(asked("question")).toBe(2);
  });
});

describe("a stream that stalls after its headers", () => {
  it("gives way to /stop at once, and the chat's next message is answered", async () => {
    fake.respond((request) =>
      lastUser(request) === "slow" ? { content: "never", trickleMs: 60_000 } : { content: `re: ${lastUser(request)}` },
    );
    const ctx = await started();
    await ctx.app.bus.publishInbound(userMessage("s", "slow"));
    await until(() => asked("slow") === 1, "the stalled request");
    await ctx.app.bus.publishInbound(userMessage("s", "/stop"));
    await ctx.channel.waitFor(2);
    expect(ctx.to("s")).toEqual(["Stopping the running turn.", "Stopped."]);
    await ctx.app.bus.publishInbound(userMessage("s", "next"));
    await ctx.settled();
    expect(ctx.to("s").slice(2)).toEqual(["re: next"]);
    expect(asked("slow")).toBe(1);
  });
});
