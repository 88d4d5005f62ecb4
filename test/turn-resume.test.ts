/**
 * Turns that resume: the built daemon (`pincer gateway`) on the fake Bot API and the fake model,
 * killed with SIGKILL at the worst moments and started again on the same PINCER_HOME. Every tool
 * call that finished runs exactly once, and the chat gets one answer.
 */
import { execFileSync } from "node:child_process";
import { once } from "node:events";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { INTERRUPTED } from "../src/agent/loop.js";
import { tempHome } from "./helpers/app.js";
import { gatewayOnFakes, killHard } from "./helpers/daemon.js";

/** In every long-running command of this file, so leftovers of this run (and only this run) can be found. */
const MARKER = `pincer-resume-${process.pid}-${Date.now()}`;

const fakes = gatewayOnFakes();
const { model, say } = fakes;
let home: string;

beforeEach(() => {
  home = tempHome("pincer-resume-");
});
afterEach(() => {
  // Unsandboxed commands outlive a SIGKILLed daemon; end this run's own. The marker is only in the
  // shell's command line, not in the `sleep` it started, so each marked shell's process group goes.
  const ownGroup = processGroupOf(process.pid);
  for (const pid of markedPids()) {
    try {
      const group = processGroupOf(pid);
      if (group === ownGroup) process.kill(pid, "SIGKILL");
      else process.kill(-group, "SIGKILL");
    } catch {
      // already gone
    }
  }
});

/** `pincer gateway` on this test's home. */
const gateway = () => fakes.gateway(home);
const until = (check: () => boolean, what: string) => fakes.until(check, what, 20_000);

/** The processes whose command line carries this run's marker. */
function markedPids(): number[] {
  try {
    return execFileSync("pgrep", ["-f", MARKER], { encoding: "utf8" }).trim().split("\n").map(Number);
  } catch {
    return []; // none left
  }
}

function processGroupOf(pid: number): number {
  // /proc/<pid>/stat: "pid (comm) state ppid pgrp …"; comm may hold spaces, so read after its ")".
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[2]);
}

const exec = (command: string) => ({ name: "exec", arguments: { command } });
const workspaceFile = (name: string) => join(home, "workspace", name);
const read = (name: string) => (existsSync(workspaceFile(name)) ? readFileSync(workspaceFile(name), "utf8") : "");
/** The tool results the model was shown in request `n`. */
const toolResults = (n: number) =>
  model.requests[n].messages.filter((m) => m.role === "tool").map((m) => String(m.content));
const replies = () => fakes.telegram.sent.map((m) => m.text);

describe("a turn cut short by SIGKILL resumes", () => {
  it("between two tool rounds: the first command is not repeated, the second runs once, one answer", async () => {
    model.enqueue(
      { toolCalls: [exec("echo one >> steps.txt")] },
      // The model is still thinking about round two when the daemon dies.
      { toolCalls: [exec("echo two >> steps.txt")], delayMs: 15_000 },
    );
    const first = gateway();
    say("run the steps");
    await until(() => model.requests.length === 2, "the second model call");
    expect(read("steps.txt")).toBe("one\n");
    await killHard(first);

    model.enqueue({ toolCalls: [exec("echo two >> steps.txt")] }, { content: "All steps done." });
    gateway();
    await until(() => replies().includes("All steps done."), "the answer");
    expect(read("steps.txt")).toBe("one\ntwo\n");
    // The resumed turn showed the model its first round as it was, then went on.
    expect(toolResults(2)).toHaveLength(1);
    expect(model.requests[2].messages.filter((m) => m.role === "user")).toHaveLength(1);
    expect(toolResults(3)).toHaveLength(2);
    expect(replies()).toEqual(["All steps done."]);
  });

  it("during a command: it is not run again, and the model is told it was interrupted", async () => {
    model.enqueue({ toolCalls: [exec(`echo started >> log.txt; sleep 40; : ${MARKER}`)] });
    const first = gateway();
    say("start the long job");
    await until(() => read("log.txt") === "started\n", "the command to start");
    await killHard(first);

    model.enqueue({ content: "It was interrupted; I will check before retrying." });
    gateway();
    await until(() => replies().length === 1, "the answer");
    expect(toolResults(1)).toEqual([INTERRUPTED]);
    expect(read("log.txt")).toBe("started\n");
    expect(replies()).toEqual(["It was interrupted; I will check before retrying."]);
  });

  it("during a read: the read runs again", async () => {
    let hits = 0;
    const server: Server = createServer((_req, res) => {
      hits++;
      // The first request hangs until the daemon dies; the second is answered.
      if (hits > 1) res.end("the page");
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/page`;
    writeFileSync(join(home, "config.json"), JSON.stringify({ web: { allow: ["127.0.0.1"] } }));
    try {
      model.enqueue({ toolCalls: [{ name: "web_fetch", arguments: { url } }] });
      const first = gateway();
      say("read the page");
      await until(() => hits === 1, "the first fetch");
      await killHard(first);

      model.enqueue({ content: "The page says hello." });
      gateway();
      await until(() => replies().length === 1, "the answer");
      expect(hits).toBe(2);
      expect(toolResults(1)[0]).toContain("the page");
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });

  it("during the model call: the call is made again, no tool repeated, one answer", async () => {
    model.enqueue({ toolCalls: [exec("echo once >> ran.txt")] }, { content: "late", delayMs: 15_000 });
    const first = gateway();
    say("do it");
    await until(() => model.requests.length === 2, "the second model call");
    await killHard(first);

    model.enqueue({ content: "Done once." });
    gateway();
    await until(() => replies().length === 1, "the answer");
    expect(read("ran.txt")).toBe("once\n");
    expect(toolResults(2)).toHaveLength(1);
    expect(replies()).toEqual(["Done once."]);
  });

  it("a second kill during the resumed turn: the message is set aside with one notice, nothing repeated", async () => {
    model.enqueue({ toolCalls: [exec("echo once >> ran.txt")] }, { content: "late", delayMs: 15_000 });
    const first = gateway();
    say("do it");
    await until(() => model.requests.length === 2, "the second model call");
    await killHard(first);

    model.enqueue({ content: "late again", delayMs: 15_000 });
    const second = gateway();
    await until(() => model.requests.length === 3, "the resumed model call");
    await killHard(second);

    gateway();
    await until(() => replies().length === 1, "the notice");
    expect(replies()[0]).toMatch(/^Sorry, I have set your message aside: pincer stopped twice while working on it/);
    expect(read("ran.txt")).toBe("once\n");
    expect(model.requests).toHaveLength(3);
  });

  it("not after /stop: a stopped turn is over", async () => {
    model.enqueue({ toolCalls: [exec(`echo started >> log.txt; sleep 40; : ${MARKER}`)] });
    const first = gateway();
    say("start the long job");
    await until(() => read("log.txt") === "started\n", "the command to start");
    say("/stop");
    await until(() => replies().includes("Stopped."), "the stop notice");
    await killHard(first);

    model.enqueue({ content: "Hello again." });
    gateway();
    say("hello");
    await until(() => replies().includes("Hello again."), "the next answer");
    // The only model call after the restart is the new message's, with the stop in the history.
    expect(model.requests).toHaveLength(2);
    expect(JSON.stringify(model.requests[1].messages)).toContain("hello");
    expect(read("log.txt")).toBe("started\n");
  });
});
