/**
 * Approvals through the whole app (issue 25): the real worker, store and exec tool, the scripted
 * model, a chat that records what pincer posts and taps the buttons the way a channel reports them.
 */
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createConsoleChannel } from "../channels/console/console-channel.js";
import type { App } from "../src/app.js";
import { Approvals } from "../src/approvals/approvals.js";
import type { Channel } from "../src/bus/channel.js";
import type { ButtonTap, InboundMessage, OutboundMessage } from "../src/bus/types.js";
import type { Config } from "../src/config/config.js";
import { tempHome, testApp, userMessage } from "./helpers/app.js";
import { fakeModelForFile } from "./helpers/model.js";
import { toolContext } from "./helpers/tools.js";
import { until } from "./helpers/until.js";

const model = fakeModelForFile();
const apps: App[] = [];
const homes: string[] = [];
afterEach(async () => {
  for (const app of apps.splice(0)) await app.stop();
  for (const home of homes.splice(0)) rmSync(home, { recursive: true, force: true });
});

/** A chat that keeps what pincer posts, each with a platform id (so edits find their message). */
function chat(app: App): Channel & { sent: OutboundMessage[] } {
  const sent: OutboundMessage[] = [];
  return {
    name: "console",
    sent,
    async start() {
      await app.bus.subscribeOutbound("console", async (msg) => {
        if (msg.kind !== "progress") sent.push(msg);
        return { messageIds: [`msg-${sent.length}`] };
      });
    },
    async stop() {
      await app.bus.unsubscribeOutbound("console");
    },
  };
}

let clockOffset = 0;

async function started(adjust: (config: Config) => void = () => {}, home = tempHome("pincer-approvals-")) {
  homes.push(home);
  clockOffset = 0;
  const app = await testApp(
    model.url,
    home,
    {},
    (config) => {
      config.memory.consolidate = false;
      config.approvals.exec = "ask";
      adjust(config);
    },
    undefined,
    { now: () => new Date(Date.now() + clockOffset) },
  );
  apps.push(app);
  const channel = chat(app);
  await app.start([channel]);
  return { app, channel, home };
}

const prompts = (sent: OutboundMessage[]) => sent.filter((m) => m.buttons?.length);
const edits = (sent: OutboundMessage[]) => sent.filter((m) => m.editOf);

function tapOn(prompt: OutboundMessage, choice: 0 | 1 | 2, who: Partial<ButtonTap> = {}): ButtonTap {
  const button = prompt.buttons?.[0]?.[choice];
  return {
    id: `tap-${Math.random()}`,
    channel: "console",
    chatId: prompt.chatId,
    senderId: "user",
    senderName: "Ann",
    isGroup: false,
    messageId: "msg-1",
    data: button?.data ?? "",
    label: button?.label,
    receivedAt: Date.now(),
    ...who,
  };
}

/** The model runs `command`, then answers with what the tool said. */
function modelRuns(command: string) {
  model.respond((request) => {
    const tool = request.messages.findLast((m) => m.role === "tool");
    if (tool && request.messages.at(-1)?.role === "tool") return { content: `tool said: ${tool.content}` };
    return { toolCalls: [{ name: "exec", arguments: { command } }] };
  });
}

function publish(app: App, msg: InboundMessage) {
  return app.bus.publishInbound(msg);
}

describe("approvals in a chat", () => {
  it("posts the exact command with three buttons, runs it on Allow once, and edits the prompt", async () => {
    const { app, channel, home } = await started();
    modelRuns("echo approved > ran.txt; echo done");
    await publish(app, userMessage("a1", "make the file"));
    const [prompt] = await until(() => prompts(channel.sent).length === 1 && prompts(channel.sent), "the prompt");
    expect(prompt.text).toContain("```\necho approved > ran.txt; echo done\n```");
    expect(prompt.buttons?.[0]?.map((b) => b.label)).toEqual(["Allow once", "Always allow", "Deny"]);
    expect(prompt.chatId).toBe("a1");
    // Asking is waiting: nothing ran, the model was asked once.
    expect(existsSync(join(home, "workspace", "ran.txt"))).toBe(false);
    expect(await app.bus.publishTap(tapOn(prompt, 0))).toEqual({ text: "Allowed once." });
    await until(() => channel.sent.some((m) => m.text.startsWith("tool said:")), "the answer");
    expect(existsSync(join(home, "workspace", "ran.txt"))).toBe(true);
    const [edit] = edits(channel.sent);
    expect(edit).toMatchObject({ chatId: "a1", buttons: [] });
    expect(edit.text).toContain("Allowed once by Ann");
    // A second tap (a double tap, another device) changes nothing.
    expect(await app.bus.publishTap(tapOn(prompt, 2))).toEqual({ text: "Already allowed." });
    expect(edits(channel.sent)).toHaveLength(1);
  });

  it("Deny returns the error to the model and runs nothing; asking again in the turn is denied unasked", async () => {
    const { app, channel, home } = await started();
    let asked = 0;
    model.respond((request) => {
      const last = request.messages.at(-1);
      if (last?.role === "tool" && asked >= 2) return { content: `gave up: ${last.content}` };
      asked++;
      return { toolCalls: [{ name: "exec", arguments: { command: "touch nope.txt" } }] };
    });
    await publish(app, userMessage("d1", "touch it"));
    const [prompt] = await until(() => prompts(channel.sent).length === 1 && prompts(channel.sent), "the prompt");
    expect(await app.bus.publishTap(tapOn(prompt, 2))).toEqual({ text: "Denied." });
    const answer = await until(() => channel.sent.find((m) => m.text.startsWith("gave up:")), "the answer");
    expect(answer.text).toContain("Error: denied by the user.");
    expect(answer.text).toContain("do not ask again");
    expect(prompts(channel.sent)).toHaveLength(1);
    expect(existsSync(join(home, "workspace", "nope.txt"))).toBe(false);
    expect(edits(channel.sent)[0]?.text).toContain("Denied by Ann");
  });

  it("Always allow runs it and later turns of that chat run the same command unasked, another one asked", async () => {
    const { app, channel } = await started();
    modelRuns("echo same");
    await publish(app, userMessage("w1", "one"));
    const [prompt] = await until(() => prompts(channel.sent).length === 1 && prompts(channel.sent), "the prompt");
    expect(await app.bus.publishTap(tapOn(prompt, 1))).toEqual({ text: "Always allowed here." });
    await until(() => channel.sent.filter((m) => m.text.startsWith("tool said:")).length === 1, "the first answer");
    await publish(app, userMessage("w1", "two"));
    await until(() => channel.sent.filter((m) => m.text.startsWith("tool said:")).length === 2, "the second answer");
    expect(prompts(channel.sent)).toHaveLength(1);
    expect(await app.store.approvals.allowedAt("console:w1", "exec:echo same")).toBeGreaterThan(0);
    // Another chat's list is its own.
    await publish(app, userMessage("w2", "three"));
    await until(() => prompts(channel.sent).length === 2, "the other chat's prompt");
  });

  it("nobody answering denies it at the deadline, not before; a tap racing the deadline gets expired", async () => {
    const { app, channel } = await started((config) => {
      config.approvals.timeoutSeconds = 30;
    });
    modelRuns("echo late");
    await publish(app, userMessage("t1", "go"));
    const [prompt] = await until(() => prompts(channel.sent).length === 1 && prompts(channel.sent), "the prompt");
    // Past a few polls the request still waits (peers' auto-deny in 400 ms).
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect((await app.store.approvals.pending()).length).toBe(1);
    expect(model.requests).toHaveLength(1);
    clockOffset = 31_000;
    // The tap comes at the deadline, before the waiting turn's next look: it is too late.
    expect(await app.bus.publishTap(tapOn(prompt, 0))).toEqual({ text: "This approval has expired." });
    const answer = await until(() => channel.sent.find((m) => m.text.startsWith("tool said:")), "the answer");
    expect(answer.text).toContain("Error: nobody answered the approval request within 30 s");
    expect(edits(channel.sent)).toHaveLength(1);
    expect(edits(channel.sent)[0]?.text).toContain("Not run: nobody answered within 30 s");
  });

  it("in a group only the person who started the turn decides; a forged tap from another chat does nothing", async () => {
    const { app, channel } = await started();
    modelRuns("echo group");
    await publish(app, { ...userMessage("g1", "run it"), isGroup: true, senderId: "owner-1" });
    const [prompt] = await until(() => prompts(channel.sent).length === 1 && prompts(channel.sent), "the prompt");
    const stranger = tapOn(prompt, 0, { senderId: "stranger", isGroup: true });
    expect(await app.bus.publishTap(stranger)).toEqual({ text: "This is not yours to decide." });
    // The owner, but in another chat, with this prompt's data.
    const elsewhere = tapOn(prompt, 0, { senderId: "owner-1", chatId: "g2" });
    expect(await app.bus.publishTap(elsewhere)).toEqual({ text: "This is not yours to decide." });
    expect((await app.store.approvals.pending()).length).toBe(1);
    expect(await app.bus.publishTap(tapOn(prompt, 0, { senderId: "owner-1", isGroup: true }))).toEqual({
      text: "Allowed once.",
    });
    await until(() => channel.sent.some((m) => m.text.startsWith("tool said: group")), "the answer");
  });

  it("two taps at once: one decides, the command runs once", async () => {
    const { app, channel } = await started();
    modelRuns("echo x >> count.txt; wc -l < count.txt");
    await publish(app, userMessage("x1", "count"));
    const [prompt] = await until(() => prompts(channel.sent).length === 1 && prompts(channel.sent), "the prompt");
    const answers = await Promise.all([
      app.bus.publishTap(tapOn(prompt, 0)),
      app.bus.publishTap(tapOn(prompt, 2)),
      app.bus.publishTap(tapOn(prompt, 1)),
    ]);
    expect(answers.filter((a) => !a.text?.startsWith("Already"))).toHaveLength(1);
    const answer = await until(() => channel.sent.find((m) => m.text.startsWith("tool said:")), "the answer");
    expect(answer.text === "tool said: 1" || answer.text.includes("denied")).toBe(true);
  });

  it("/stop while waiting ends the turn and the prompt: a later tap gets expired", async () => {
    const { app, channel } = await started();
    modelRuns("echo never");
    await publish(app, userMessage("s1", "go"));
    const [prompt] = await until(() => prompts(channel.sent).length === 1 && prompts(channel.sent), "the prompt");
    await publish(app, userMessage("s1", "/stop"));
    await until(() => channel.sent.some((m) => m.text === "Stopped."), "the turn stopped");
    await until(() => edits(channel.sent).length === 1, "the prompt closed");
    expect(edits(channel.sent)[0]?.text).toContain("ended before anyone answered");
    expect(await app.bus.publishTap(tapOn(prompt, 0))).toEqual({ text: "This approval has expired." });
  });

  it("a scheduled run asks its job's owner in the job's chat", async () => {
    const { app, channel } = await started();
    modelRuns("echo reminder");
    await publish(app, {
      ...userMessage("c1", "Scheduled reminder is due now."),
      id: "cron:job1:1",
      channel: "system",
      senderId: "cron",
      senderName: "scheduler",
      sessionKey: "console:c1",
      run: { kind: "cron", jobId: "job1", scheduledAt: 1, userId: "job-owner" },
    });
    const [prompt] = await until(() => prompts(channel.sent).length === 1 && prompts(channel.sent), "the prompt");
    expect(prompt.chatId).toBe("c1");
    expect(await app.bus.publishTap(tapOn(prompt, 0, { senderId: "user" }))).toEqual({
      text: "This is not yours to decide.",
    });
    expect(await app.bus.publishTap(tapOn(prompt, 0, { senderId: "job-owner" }))).toEqual({ text: "Allowed once." });
    await until(() => channel.sent.some((m) => m.text.startsWith("tool said: reminder")), "the answer");
  });

  it("a restart between the request and the tap: the resumed turn waits on the same buttons, no second prompt", async () => {
    const first = await started();
    modelRuns("echo once >> runs.txt; cat runs.txt");
    await publish(first.app, userMessage("r1", "go"));
    const [prompt] = await until(
      () => prompts(first.channel.sent).length === 1 && prompts(first.channel.sent),
      "prompt",
    );
    await first.app.stop();
    apps.splice(apps.indexOf(first.app), 1);
    homes.splice(homes.indexOf(first.home), 1);
    const second = await started(() => {}, first.home);
    await until(async () => (await second.app.store.journal.pendingInbound()).length === 1, "the turn resumed");
    expect(await second.app.bus.publishTap(tapOn(prompt, 0))).toEqual({ text: "Allowed once." });
    const answer = await until(() => second.channel.sent.find((m) => m.text.startsWith("tool said:")), "the answer");
    expect(answer.text).toBe("tool said: once");
    expect(prompts(second.channel.sent)).toHaveLength(0);
    expect(edits(second.channel.sent)).toHaveLength(1);
  });

  it("pincer chat asks on the terminal: y, a or n decides", async () => {
    const home = tempHome("pincer-approvals-");
    homes.push(home);
    const app = await testApp(model.url, home, {}, (config) => {
      config.memory.consolidate = false;
      config.approvals.exec = "ask";
    });
    apps.push(app);
    const written: OutboundMessage[] = [];
    const terminal = createConsoleChannel({ bus: app.bus, chatId: "term", write: (msg) => written.push(msg) });
    await app.start([terminal]);
    modelRuns("echo from-terminal");
    const turn = terminal.send("run it");
    const prompt = await until(() => written.find((m) => m.buttons?.length), "the prompt on the terminal");
    expect(prompt.text).toContain("[y] Allow once  [a] Always allow  [n] Deny");
    await terminal.send("y");
    await turn;
    expect(written.map((m) => m.text)).toContain("Allowed once.");
    await until(() => written.some((m) => m.text === "tool said: from-terminal"), "the answer");
    await until(() => written.some((m) => m.text.startsWith("✅ Allowed once by you")), "the prompt rewritten");
    // No prompt open: "y" is a message like any other.
    model.respond(() => ({ content: "a plain y" }));
    await terminal.send("y");
    expect(written.at(-1)?.text).toBe("a plain y");
  });

  it("a decision taken in another process wakes the waiting call by polling; a swapped call does not run", async () => {
    const { app, channel } = await started();
    const options = { store: app.store.approvals, bus: app.bus, timeoutSeconds: 60, log: app.log };
    const policy = { exec: "ask" as const, tools: [], allowPatterns: [] };
    const here = new Approvals({ ...options, policy });
    const elsewhere = new Approvals({ ...options, policy });
    const stop = new AbortController();
    const ctx = toolContext("p1", app.config.workspace, stop.signal);
    const call = { id: "call_7", name: "exec", arguments: JSON.stringify({ command: "echo original" }) };
    const waiting = here.check(call, ctx, true);
    const asked = await until(async () => (await app.store.approvals.pending())[0], "the request");
    expect(asked.summary).toBe("echo original");
    // The same call read back with another command (a tampered journal): refused, not asked again.
    const swapped = { ...call, arguments: JSON.stringify({ command: "rm -f important" }) };
    expect(await here.check(swapped, ctx, true)).toBe(
      "Error: this call differs from the one the user was asked about.",
    );
    expect(prompts(channel.sent)).toHaveLength(1);
    expect(await elsewhere.decide(asked.id, "once", "Ann")).toEqual({ taken: true, text: "Allowed once." });
    expect(await waiting).toBeUndefined();
  });

  it("unlisted: commands in exec.allowPatterns run unasked; others are asked, and run after a yes", async () => {
    const { app, channel } = await started((config) => {
      config.approvals.exec = "unlisted";
      config.exec.allowPatterns = ["^echo listed$"];
    });
    modelRuns("echo listed");
    await publish(app, userMessage("u1", "listed"));
    await until(() => channel.sent.some((m) => m.text === "tool said: listed"), "the listed command's answer");
    expect(prompts(channel.sent)).toHaveLength(0);
    modelRuns("echo other");
    await publish(app, userMessage("u1", "other"));
    const [prompt] = await until(() => prompts(channel.sent).length === 1 && prompts(channel.sent), "the prompt");
    await app.bus.publishTap(tapOn(prompt, 0));
    // Not refused by the allowlist after the yes: the guard's allowlist gave way to asking.
    await until(() => channel.sent.some((m) => m.text === "tool said: other"), "the unlisted command's answer");
  });

  it("a background helper asks the user who started it, in their chat", async () => {
    const { app, channel } = await started();
    model.respond((request) => {
      const last = request.messages.at(-1);
      const helper = String(request.messages[0]?.content).startsWith("You are a background helper");
      if (helper) {
        if (last?.role === "tool") return { content: `helper found: ${last.content}` };
        return { toolCalls: [{ name: "exec", arguments: { command: "echo from-helper" } }] };
      }
      if (String(last?.content).includes("Background helper")) return { content: "relayed" };
      if (last?.role === "tool") return { content: "started a helper" };
      return { toolCalls: [{ name: "spawn", arguments: { task: "run the command" } }] };
    });
    await publish(app, { ...userMessage("h1", "do it in the background"), senderId: "ann" });
    const [prompt] = await until(() => prompts(channel.sent).length === 1 && prompts(channel.sent), "the prompt");
    expect(prompt.chatId).toBe("h1");
    expect(await app.bus.publishTap(tapOn(prompt, 0, { senderId: "someone" }))).toEqual({
      text: "This is not yours to decide.",
    });
    expect(await app.bus.publishTap(tapOn(prompt, 0, { senderId: "ann" }))).toEqual({ text: "Allowed once." });
    await until(() => channel.sent.some((m) => m.text === "relayed"), "the helper's result relayed");
    // The relay turn got the helper's result: the command ran after the yes.
    const relay = model.requests.find((r) => String(r.messages.at(-1)?.content).includes("Background helper"));
    expect(String(relay?.messages.at(-1)?.content)).toContain("helper found: from-helper");
  });

  it("a run for nobody in particular (the heartbeat) is decided on the control page only", async () => {
    const { app, channel } = await started();
    modelRuns("echo beat");
    await publish(app, {
      ...userMessage("hb", "Heartbeat: look at HEARTBEAT.md."),
      id: "heartbeat:1",
      channel: "system",
      senderId: "heartbeat",
      sessionKey: "system:heartbeat",
      run: { kind: "heartbeat", deliverTo: "console:hb" },
    });
    const [prompt] = await until(() => prompts(channel.sent).length === 1 && prompts(channel.sent), "the prompt");
    expect(prompt.chatId).toBe("hb");
    expect(prompt.text).toContain("The owner decides on the control page");
    expect(await app.bus.publishTap(tapOn(prompt, 0))).toEqual({ text: "This is not yours to decide." });
    const [pending] = await app.store.approvals.pending();
    expect(await app.approvals?.decide(pending.id, "once", "the control page")).toEqual({
      taken: true,
      text: "Allowed once.",
    });
    await until(() => channel.sent.some((m) => m.text === "tool said: beat"), "the answer");
  });

  it("a 5,000-character write_file is asked about with its content shortened, and after a yes written exactly", async () => {
    const { app, channel, home } = await started((config) => {
      config.approvals.exec = "off";
      config.approvals.tools = ["write_file"];
    });
    const content = Array.from({ length: 100 }, (_, i) => `line ${i} ${"x".repeat(40)}\n`)
      .join("")
      .padEnd(5000, "y");
    model.respond((request) => {
      const last = request.messages.at(-1);
      if (last?.role === "tool") return { content: `tool said: ${last.content}` };
      return { toolCalls: [{ name: "write_file", arguments: { path: "big.txt", content } }] };
    });
    await publish(app, userMessage("w1", "write it"));
    const [prompt] = await until(() => prompts(channel.sent).length === 1 && prompts(channel.sent), "the prompt");
    expect(prompt.text).toContain("(5000 characters in all)");
    expect(prompt.text).toMatch(/sha256 of the full arguments: [0-9a-f]{64}/);
    await app.bus.publishTap(tapOn(prompt, 0));
    await until(() => channel.sent.some((m) => m.text.startsWith("tool said:")), "the answer");
    expect(readFileSync(join(home, "workspace", "big.txt"), "utf8")).toBe(content);
  });

  it("with approvals absent nothing is asked", async () => {
    const { app, channel } = await started((config) => {
      config.approvals.exec = "off";
    });
    modelRuns("echo free");
    await publish(app, userMessage("o1", "go"));
    await until(() => channel.sent.some((m) => m.text.startsWith("tool said: free")), "the answer");
    expect(prompts(channel.sent)).toHaveLength(0);
    expect(app.approvals).toBeUndefined();
  });
});
