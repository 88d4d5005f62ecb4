import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { packageRoot } from "../src/paths.js";
import { tempHome } from "./helpers/app.js";
import { killHard, pincerAsNewUser as pincer, startDaemonAsNewUser, stopDaemon } from "./helpers/daemon.js";
import { fakeModelForFile } from "./helpers/model.js";
import { until } from "./helpers/until.js";

const main = join(packageRoot(), "dist/src/cli/main.js");

/** The environment of a fresh user: only what the test names, run from an empty folder (no .env). */
function env(extra: Record<string, string>): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, HOME: tempHome("pincer-cli-home-"), PINCER_TIMEZONE: "UTC", ...extra };
}

/** `pincer chat` as a child process with piped stdin, and ways to wait for what it prints. */
function startChat(vars: Record<string, string> = { PINCER_HOME: tempHome(), LOG_LEVEL: "silent" }) {
  const child = spawn(process.execPath, [main, "chat"], {
    env: env({ OPENAI_API_KEY: "test", OPENAI_BASE_URL: fake.url, ...vars }),
    cwd: tempHome("pincer-cwd-"),
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk) => {
    stdout += chunk;
  });
  child.stderr.on("data", (chunk) => {
    stderr += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.on("exit", resolve));
  return {
    child,
    exited,
    stdout: () => stdout,
    stderr: () => stderr,
    type: (text: string) => child.stdin.write(text),
    waitFor: (text: string, times = 1) =>
      until(
        () => stdout.split(text).length > times,
        `"${text}" x${times}`,
        undefined,
        () => `in:\n${stdout}`,
      ),
  };
}

const fake = fakeModelForFile();

describe("pincer CLI (built)", () => {
  it("stops with one sentence naming OPENAI_API_KEY when it is missing", async () => {
    const result = await pincer(["agent", "-m", "hi"], { PINCER_HOME: tempHome() });
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(result.stderr).toMatch(/^pincer: OPENAI_API_KEY is not set/);
  });

  it("names a bad variable and reads .env from the working directory", async () => {
    const cwd = tempHome("pincer-cwd-");
    writeFileSync(join(cwd, ".env"), "OPENAI_API_KEY=from-file\nPINCER_SANDBOX=docker\n");
    const result = await pincer(["agent", "-m", "hi"], { PINCER_HOME: tempHome() }, cwd);
    expect(result.code).toBe(1);
    expect(result.stderr.trim()).toBe('pincer: PINCER_SANDBOX must be "bwrap" or "none", not "docker".');
  });

  it("names a bad setting of the config file, even one checked after start-up", async () => {
    const home = tempHome();
    writeFileSync(join(home, "config.json"), JSON.stringify({ exec: { denyPatterns: ["(unclosed"] } }));
    const result = await pincer(["agent", "-m", "hi"], { OPENAI_API_KEY: "test", PINCER_HOME: home });
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(result.stderr).toMatch(/^pincer: .*denyPatterns/);
  });

  it("runs a turn with several tool calls through `pincer agent -m` and remembers it", async () => {
    const home = tempHome();
    const vars = { OPENAI_API_KEY: "test", OPENAI_BASE_URL: fake.url, PINCER_HOME: home, LOG_LEVEL: "silent" };
    fake.requests.length = 0;
    fake.enqueue(
      {
        toolCalls: [
          { name: "write_file", arguments: { path: "notes/todo.txt", content: "buy milk\n" } },
          { name: "list_dir", arguments: { path: "notes" } },
          { name: "read_file", arguments: { path: "notes/todo.txt" } },
        ],
      },
      { content: "Saved your list: buy milk." },
      { content: "You asked me to remember milk." },
    );
    const first = await pincer(["agent", "-m", "note: buy milk"], vars);
    expect(first.stderr).toBe("");
    expect(first.stdout.trim()).toBe("Saved your list: buy milk.");
    expect(readFileSync(join(home, "workspace/notes/todo.txt"), "utf8")).toBe("buy milk\n");
    const results = fake.requests[1].messages.filter((m) => m.role === "tool").map((m) => String(m.content));
    expect(results).toHaveLength(3);
    expect(results[1]).toContain("todo.txt");
    expect(results[2]).toContain("buy milk");
    // The workspace template and the system prompt built from it.
    expect(existsSync(join(home, "workspace/SOUL.md"))).toBe(true);
    expect(String(fake.requests[0].messages[0].content)).toContain("## SOUL.md");

    const second = await pincer(["agent", "-m", "what did I ask?"], vars);
    expect(second.stdout.trim()).toBe("You asked me to remember milk.");
    expect(JSON.stringify(fake.requests[2].messages)).toContain("note: buy milk");
  });

  it("waits out an approval nobody can answer in `pincer agent -m`, then goes on", async () => {
    const home = tempHome();
    writeFileSync(
      join(home, "config.json"),
      JSON.stringify({ approvals: { tools: ["write_file"], timeoutSeconds: 5 } }),
    );
    fake.enqueue(
      { toolCalls: [{ name: "write_file", arguments: { path: "a.txt", content: "x" } }] },
      { content: "Nobody said yes." },
    );
    const vars = { OPENAI_API_KEY: "test", OPENAI_BASE_URL: fake.url, PINCER_HOME: home, LOG_LEVEL: "silent" };
    const result = await pincer(["agent", "-m", "write a.txt"], vars);
    // Nothing but the approval's poll timer is pending meanwhile: were it unref'd, node would quit (code 13).
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("Approval needed");
    expect(result.stdout.trim().endsWith("Nobody said yes.")).toBe(true);
    expect(String(fake.requests[1].messages.at(-1)?.content)).toContain("nobody answered the approval request");
  });

  it("holds a conversation in `pincer chat`, with commands answered by pincer", async () => {
    fake.enqueue({ content: "Hello from the model." }, { content: "Second answer." });
    const chat = startChat();
    chat.type("hi there\n");
    await chat.waitFor("pincer: Hello from the model.");
    chat.type("/status\n");
    await chat.waitFor("[notice]: Model");
    chat.child.stdin.end("and again\n");
    expect(await chat.exited).toBe(0);
    expect(chat.stdout()).toMatch(/\[notice\]: Model: gpt-4.1-mini\nConversation: console:local, 2 stored messages/);
    expect(chat.stdout()).toContain("pincer: Second answer.");
    expect(chat.stdout().indexOf("Hello from the model.")).toBeLessThan(chat.stdout().indexOf("Second answer."));
  });

  it("keeps the log out of `pincer chat`: the full log in a file, warnings on stderr in words", async () => {
    const home = tempHome();
    // A prompt file that is a link is skipped with a warning.
    mkdirSync(join(home, "workspace"));
    symlinkSync("/etc/hostname", join(home, "workspace/USER.md"));
    fake.enqueue({ content: "Hello from the model." }, { content: "Second answer." });
    const chat = startChat({ PINCER_HOME: home, LOG_LEVEL: "info" });
    chat.type("hi there\n");
    await chat.waitFor("pincer: Hello from the model.");
    chat.child.stdin.end("and again\n");
    expect(await chat.exited).toBe(0);
    // Piped input gets the banner and the answers, nothing of the log and no prompts between them.
    expect(chat.stdout().split("\n").filter(Boolean).slice(1)).toEqual([
      "pincer: Hello from the model.",
      "pincer: Second answer.",
    ]);
    expect(chat.stderr()).not.toContain('"level"');
    expect(chat.stderr()).toMatch(/^pincer: warning: prompt file skipped \(USER\.md: .*link/m);
    const log = readFileSync(join(home, "logs/chat.log"), "utf8");
    expect(log.match(/"msg":"turn finished"/g)).toHaveLength(2);
    expect(log).toContain('"msg":"prompt file skipped"');
  });

  it("reads input during a turn: /stop and Ctrl-C stop it, a second Ctrl-C quits", async () => {
    fake.enqueue({ content: "too late", delayMs: 8_000 }, { content: "also too late", delayMs: 8_000 });
    const chat = startChat();
    chat.type("a slow question\n");
    await until(
      () => fake.requests.some((r) => JSON.stringify(r.messages).includes("a slow question")),
      "its model call",
    );
    chat.type("/stop\n");
    await chat.waitFor("[notice]: Stopped.");
    chat.type("another slow one\n");
    await until(
      () => fake.requests.some((r) => JSON.stringify(r.messages).includes("another slow one")),
      "its model call",
    );
    chat.child.kill("SIGINT");
    await chat.waitFor("stopping the turn");
    await chat.waitFor("[notice]: Stopped.", 2);
    chat.child.kill("SIGINT");
    expect(await chat.exited).toBe(0);
    expect(chat.stdout()).not.toContain("too late");
  });

  it("exits non-zero from `pincer agent -m` when the model cannot answer, with a hint for a 404", async () => {
    const home = tempHome();
    writeFileSync(join(home, "config.json"), JSON.stringify({ agent: { modelRetries: 0 } }));
    fake.enqueue({ status: 500 });
    const failed = await pincer(["agent", "-m", "hi"], {
      OPENAI_API_KEY: "test",
      OPENAI_BASE_URL: fake.url,
      PINCER_HOME: home,
      LOG_LEVEL: "silent",
    });
    expect(failed).toMatchObject({ code: 3, stdout: "" });
    expect(failed.stdout).toBe("");
    expect(failed.stderr).toMatch(/^Sorry, the model endpoint answered 500/);

    const root = fake.url.replace(/\/v1$/, "");
    const missingV1 = await pincer(["agent", "-m", "hi"], {
      OPENAI_API_KEY: "test",
      OPENAI_BASE_URL: root,
      PINCER_HOME: home,
      LOG_LEVEL: "silent",
    });
    expect(missingV1.code).toBe(3);
    expect(missingV1.stderr.trim()).toBe(
      `Sorry, the model endpoint answered 404 (not found): OPENAI_BASE_URL ${root} has no path; most endpoints want ${root}/v1, and that PINCER_MODEL "gpt-4.1-mini" is a model it serves.`,
    );
  });

  it("runs the gateway with no channel configured, says why, and stops cleanly on SIGTERM", async () => {
    const daemon = startDaemonAsNewUser({ OPENAI_API_KEY: "test", OPENAI_BASE_URL: fake.url, PINCER_HOME: tempHome() });
    const log = () => daemon.output.join("");
    try {
      await until(() => log().includes("pincer is running"), "the gateway to start", 15_000, log);
      expect(log()).toContain("telegram is off: TELEGRAM_BOT_TOKEN is not set");
      expect(log()).toContain("discord is off: DISCORD_BOT_TOKEN is not set");
      expect(log()).toContain("pincer is running");
      expect(await stopDaemon(daemon)).toBe(0);
    } finally {
      await killHard(daemon); // only if a check above failed while it ran
    }
  });

  it("onboards without overwriting, and reports bad pairing codes", async () => {
    const home = tempHome();
    const cwd = tempHome("pincer-cwd-");
    writeFileSync(join(cwd, ".env"), "# mine\n");
    const onboard = await pincer(["onboard"], { PINCER_HOME: home }, cwd);
    expect(onboard.code).toBe(0);
    expect(onboard.stdout).toContain("exists, left alone");
    expect(readFileSync(join(cwd, ".env"), "utf8")).toBe("# mine\n");
    expect(existsSync(join(home, "workspace/AGENTS.md"))).toBe(true);
    writeFileSync(join(home, "workspace/AGENTS.md"), "custom");
    await pincer(["onboard"], { PINCER_HOME: home }, cwd);
    expect(readFileSync(join(home, "workspace/AGENTS.md"), "utf8")).toBe("custom");

    const approve = await pincer(["pairing", "approve", "telegram", "NOPE1234"], { PINCER_HOME: home }, cwd);
    expect(approve.code).toBe(1);
    expect(approve.stdout).toMatch(/No valid pairing code NOPE1234 on telegram/);
  });
});
