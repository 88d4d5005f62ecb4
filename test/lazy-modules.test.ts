import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { beforeEach, describe, expect, it } from "vitest";
import { tempHome } from "./helpers/app.js";
import { type Daemon, gatewayOnFakes, stopDaemon } from "./helpers/daemon.js";

/**
 * The built daemon loads its big libraries when first needed, not at start: the MCP SDK when a
 * server is configured, the web and exec libraries on the first call of their tools. A library
 * that cannot be loaded fails only what needs it.
 *
 * What the daemon loaded is seen from inside it: a module given with --import registers loader
 * hooks that write down every ES module (and CommonJS package entered from one) as it loads, can
 * make chosen packages unresolvable, and writes the CommonJS cache (what `require` loaded) at exit.
 */

const HOOKS = `
import { appendFileSync } from "node:fs";
let out;
let blocked = [];
export function initialize(data) {
  out = data.out;
  blocked = data.blocked;
}
export async function resolve(specifier, context, next) {
  if (blocked.some((name) => specifier === name || specifier.startsWith(name + "/"))) {
    throw Object.assign(new Error("Cannot find package '" + specifier + "' (hidden by the test)"), { code: "ERR_MODULE_NOT_FOUND" });
  }
  return next(specifier, context);
}
export async function load(url, context, next) {
  appendFileSync(out, url + "\\n");
  return next(url, context);
}
`;

const PRELOAD = `
import { appendFileSync } from "node:fs";
import { createRequire, register } from "node:module";
const out = process.env.PINCER_TEST_LOADED;
register("./hooks.mjs", import.meta.url, {
  data: { out, blocked: (process.env.PINCER_TEST_BLOCKED || "").split(",").filter(Boolean) },
});
process.on("exit", () => appendFileSync(out, "-- at exit, CommonJS --\\n" + Object.keys(createRequire(import.meta.url).cache).join("\\n") + "\\n"));
`;

/** Packages the daemon must not load to start, with what each one is for. */
const LAZY = [
  "@modelcontextprotocol/sdk", // MCP servers: only when configured
  "undici", // web_fetch
  "execa", // exec and the sandbox check
  "prom-client", // /metrics, only with the control page
  "htmlparser2", // web_fetch's fallback when a page cannot be converted
  "ajv-formats", // tools' arguments: checked from the first call
  "re2js", // globs of the file tools
];
const loadedPackage = (loaded: string, name: string) => loaded.includes(`/node_modules/${name}/`);

const fakes = gatewayOnFakes({ TELEGRAM_ALLOW_FROM: "*" });
const { model, gateway, say, until } = fakes;

beforeEach(() => {
  model.respond(() => ({ content: "ok" }));
});

interface Traced {
  daemon: Daemon;
  home: string;
  /** Every module loaded so far (and, after stop(), the CommonJS cache at exit). */
  loaded(): string;
  stop(): Promise<void>;
}

function tracedGateway(options: { blocked?: string[]; config?: object } = {}): Traced {
  const home = tempHome("pincer-lazy-");
  writeFileSync(join(home, "hooks.mjs"), HOOKS);
  writeFileSync(join(home, "preload.mjs"), PRELOAD);
  const out = join(home, "loaded.txt");
  if (options.config) writeFileSync(join(home, "config.json"), JSON.stringify(options.config));
  const daemon = gateway(home, {
    NODE_OPTIONS: `--import=${pathToFileURL(join(home, "preload.mjs")).href}`,
    PINCER_TEST_LOADED: out,
    PINCER_TEST_BLOCKED: (options.blocked ?? []).join(","),
  });
  return {
    daemon,
    home,
    loaded: () => (existsSync(out) ? readFileSync(out, "utf8") : ""),
    async stop() {
      expect(await stopDaemon(daemon), daemon.output.join("")).toBe(0);
    },
  };
}

const polling = (t: Traced) => () => fakes.telegram.callsTo("getUpdates").length > 0 && t.loaded();
const toolResults = () =>
  model.requests.flatMap((r) => r.messages.filter((m) => m.role === "tool").map((m) => String(m.content)));

describe("what the daemon loads, and when", () => {
  it("starts without the MCP, web and exec libraries; 8 first turns at once, and no tokenizer ever", async () => {
    const traced = tracedGateway();
    await until(polling(traced), "Telegram polled");
    const atStart = traced.loaded();
    // The hooks really see packages: the ones the daemon needs are there.
    for (const needed of ["better-sqlite3", "pino", "marked"]) expect(loadedPackage(atStart, needed)).toBe(true);
    for (const lazy of LAZY) expect(loadedPackage(atStart, lazy), `${lazy} loaded at start`).toBe(false);
    // The start-up probe asks the endpoint with fetch: the model client (~13 MB) waits for the first turn.
    expect(loadedPackage(atStart, "openai"), "openai loaded at start").toBe(false);

    // Eight chats' first messages at once: the first turns after a start.
    model.respond((request) => ({ content: `re: ${String(request.messages.at(-1)?.content)}` }));
    for (let chat = 1; chat <= 8; chat++) say(`hello from ${chat}`, chat);
    await until(() => fakes.telegram.sent.length >= 8, "eight replies");
    const replies = fakes.telegram.sent.map((m) => `${m.chatId}:${m.text}`).sort();
    expect(replies).toEqual(Array.from({ length: 8 }, (_, i) => `${i + 1}:re: hello from ${i + 1}`).sort());
    await traced.stop();
    const all = traced.loaded();
    expect(loadedPackage(all, "openai")).toBe(true);
    // Tokens are estimated: a tokenizer's tables (~50 MB) are never loaded.
    expect(loadedPackage(all, "gpt-tokenizer")).toBe(false);
    for (const lazy of LAZY) expect(loadedPackage(all, lazy)).toBe(false);
    // The config file was checked by the validator the build wrote, without ajv's compiler.
    expect(all).toContain("dist/src/config/file-validator.cjs");
    expect(all).not.toContain("/node_modules/ajv/dist/ajv.js");
  });

  it("a library that cannot be loaded fails its tool with an Error for the model and its MCP server in the log; the daemon goes on", async () => {
    const traced = tracedGateway({
      blocked: ["undici", "execa", "@modelcontextprotocol/sdk"],
      config: { mcp: { servers: { files: { command: "node", args: ["-e", "setInterval(() => {}, 1000)"] } } } },
    });
    await until(
      () => traced.daemon.output.join("").includes("the MCP client library could not be loaded"),
      "the MCP server's error",
    );
    model.enqueue(
      {
        toolCalls: [
          { name: "web_fetch", arguments: { url: "https://example.com/" } },
          { name: "exec", arguments: { command: "echo hi" } },
        ],
      },
      { content: "done" },
    );
    say("fetch and run", 7);
    await until(() => fakes.telegram.sent.find((m) => m.text === "done"), "the reply");
    const results = toolResults();
    expect(results).toHaveLength(2);
    for (const result of results) expect(result).toMatch(/^Error: .*Cannot find package '(undici|execa)'/);
    // The next message still gets an answer.
    model.respond(() => ({ content: "still here" }));
    say("and now?", 7);
    await until(() => fakes.telegram.sent.find((m) => m.text === "still here"), "the second reply");
    await traced.stop();
  });

  it("loads the MCP SDK for a configured server, and a server that dies at once leaves the daemon answering", async () => {
    const traced = tracedGateway({
      config: {
        mcp: {
          servers: { broken: { command: "node", args: ["-e", "console.error('no database here'); process.exit(3)"] } },
        },
      },
    });
    await until(() => traced.daemon.output.join("").includes("no database here"), "the server's last words in the log");
    expect(loadedPackage(traced.loaded(), "@modelcontextprotocol/sdk")).toBe(true);
    say("hi", 9);
    await until(() => fakes.telegram.sent.find((m) => m.text === "ok"), "the reply");
    await traced.stop();
  });

  it("without the model client library the daemon still starts, and its log says why turns fail", async () => {
    const traced = tracedGateway({ blocked: ["openai"] });
    const said = (text: string) => () => traced.daemon.output.join("").includes(text);
    await until(polling(traced), "Telegram polled");
    say("hi", 3);
    // Like a refused key: the turn fails with the reason, and the daemon keeps running.
    await until(said('"err":"the model client could not be loaded'), "the failed turn's reason");
    expect(traced.daemon.exitCode).toBeNull();
    await traced.stop();
  });
  it("two web_fetch calls in the first turn both wait for the one load of the HTTP client and read their pages", async () => {
    const site = createServer((req, res) => {
      if (req.url === "/a.txt") res.writeHead(200, { "content-type": "text/plain" }).end("plain page A");
      else {
        const text = "html page B tells a long story about lazy loading, so the reader keeps it. ".repeat(20);
        res.writeHead(200, { "content-type": "text/html" });
        res.end(
          `<html><head><title>B</title></head><body><article><p>${text}</p><p>${text}</p></article></body></html>`,
        );
      }
    });
    site.listen(0, "127.0.0.1");
    await new Promise((resolve) => site.once("listening", resolve));
    const base = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
    try {
      const traced = tracedGateway({ config: { web: { allow: ["127.0.0.1"] } } });
      await until(polling(traced), "Telegram polled");
      expect(loadedPackage(traced.loaded(), "undici")).toBe(false);
      model.enqueue(
        {
          toolCalls: [
            { name: "web_fetch", arguments: { url: `${base}/a.txt` } },
            { name: "web_fetch", arguments: { url: `${base}/b.html` } },
          ],
        },
        { content: "read both" },
      );
      say("read these", 11);
      await until(() => fakes.telegram.sent.find((m) => m.text === "read both"), "the reply");
      const [a, b] = toolResults();
      expect(a).toContain("plain page A");
      expect(b).toContain("html page B");
      expect(loadedPackage(traced.loaded(), "undici")).toBe(true);
      await traced.stop();
    } finally {
      await new Promise((resolve) => site.close(resolve));
    }
  });
});
