import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, readdirSync } from "node:fs";
import { createServer, request as httpRequest, type Server } from "node:http";
import { join } from "node:path";
import { afterAll, beforeAll } from "vitest";
import { freePort } from "./net.js";
import { until } from "./until.js";

/** Where .ci/build-llama-server caches its builds, one directory per node-llama-cpp version. */
const CACHE_ROOT = "/var/cache/pincer-ci";

export interface LlamaBuild {
  /** The llama-server binary, built from node-llama-cpp's bundled llama.cpp source. */
  binary: string;
  /** The tiny scripted model (.ci/write-tiny-model.py says what it answers to what). */
  model: string;
}

function buildIn(dir: string): LlamaBuild | undefined {
  const build = { binary: join(dir, "bin/llama-server"), model: join(dir, "tiny-qwen3.gguf") };
  return existsSync(build.binary) && existsSync(build.model) ? build : undefined;
}

/**
 * The llama-server build the tests run against: PINCER_LLAMA_SERVER (a build directory, set by
 * .ci/run), else the newest one in the cache. Missing on a developer's machine: one loud line
 * naming what to run, and the caller skips. Missing in CI (`CI=true`): the file fails.
 */
export function findLlamaServer(): LlamaBuild | undefined {
  const named = process.env.PINCER_LLAMA_SERVER;
  const cached = existsSync(CACHE_ROOT)
    ? readdirSync(CACHE_ROOT)
        .filter((name) => /^llama-server-[\d.]+$/.test(name))
        .sort((a, b) => a.localeCompare(b, undefined, { numeric: true }))
        .reverse()
        .map((name) => join(CACHE_ROOT, name))
    : [];
  for (const dir of named ? [named] : cached) {
    const build = buildIn(dir);
    if (build) return build;
  }
  const line = `a llama-server build and its test model (${named ?? `${CACHE_ROOT}/llama-server-<version>`}); run .ci/build-llama-server (10 minutes or more on 2 cores)`;
  if (process.env.CI === "true") throw new Error(`CI runs every test, and some need ${line}.`);
  console.warn(`\n!!! SKIPPED: tests in this file need ${line}.\n`);
  return undefined;
}

/** One chat-completion exchange seen by the recording proxy in front of llama-server. */
export interface Exchange {
  body: { messages: Array<{ role: string; content?: unknown; tool_calls?: unknown }>; [key: string]: unknown };
  status: number;
  response: string;
}

export interface LlamaServer {
  /** The OpenAI-compatible base URL (…/v1) of the recording proxy in front of the server. */
  readonly url: string;
  /** Every /v1/chat/completions request pincer sent, with the server's raw answer. */
  readonly exchanges: Exchange[];
  /** What llama-server wrote to stdout and stderr. */
  readonly output: string[];
  stop(): Promise<void>;
}

function parsedBody(body: Buffer): Exchange["body"] {
  try {
    return JSON.parse(body.toString()) as Exchange["body"];
  } catch {
    return { messages: [], unparsed: body.toString() };
  }
}

/** Records every chat completion on its way through to `target`, streamed answers included. */
async function recordingProxy(target: number, exchanges: Exchange[]): Promise<Server> {
  const proxy = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      const upstream = httpRequest(
        { host: "127.0.0.1", port: target, method: req.method, path: req.url, headers: req.headers },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          const parts: Buffer[] = [];
          answer.on("data", (chunk: Buffer) => {
            parts.push(chunk);
            res.write(chunk);
          });
          answer.on("end", () => {
            res.end();
            if (req.url?.endsWith("/chat/completions"))
              exchanges.push({
                body: parsedBody(body),
                status: answer.statusCode ?? 0,
                response: Buffer.concat(parts).toString(),
              });
          });
        },
      );
      upstream.on("error", () => res.destroy());
      res.on("close", () => upstream.destroy());
      upstream.end(body);
    });
  });
  proxy.listen(0, "127.0.0.1");
  await once(proxy, "listening");
  return proxy;
}

/**
 * Starts llama-server with the tiny model on 127.0.0.1 and a free port, with `flags` on top of
 * the defaults (one slot, one thread, the model's own template), and waits for /health.
 */
export async function startLlamaServer(build: LlamaBuild, flags: string[]): Promise<LlamaServer> {
  const port = await freePort();
  const output: string[] = [];
  const child: ChildProcess = spawn(
    build.binary,
    ["-m", build.model, "--host", "127.0.0.1", "--port", String(port), "-np", "1", "-t", "1", ...flags],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  child.stdout?.on("data", (chunk: Buffer) => output.push(chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => output.push(chunk.toString()));
  const exited = once(child, "exit");
  // Should the test process end without its hooks (a crash, a timeout's kill), the server goes too.
  const killOnExit = () => child.kill("SIGKILL");
  process.once("exit", killOnExit);
  const exchanges: Exchange[] = [];
  const proxy = await recordingProxy(port, exchanges);
  const stop = async () => {
    process.off("exit", killOnExit);
    proxy.closeAllConnections();
    await new Promise((resolve) => proxy.close(resolve));
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGKILL");
      await exited;
    }
  };
  try {
    await until(
      async () => {
        if (child.exitCode !== null) throw new Error(`llama-server exited (${child.exitCode}):\n${output.join("")}`);
        const health = await fetch(`http://127.0.0.1:${port}/health`).catch(() => undefined);
        return health?.ok;
      },
      `llama-server ${flags.join(" ")} to be healthy`,
      60_000,
      () => output.join(""),
    );
  } catch (err) {
    await stop();
    throw err;
  }
  const { port: proxyPort } = proxy.address() as { port: number };
  return { url: `http://127.0.0.1:${proxyPort}/v1`, exchanges, output, stop };
}

/**
 * One llama-server for a whole test file (or describe block), started with `flags` before its
 * tests and always killed after them. Undefined until started; tests guard with the build.
 */
export function llamaServerForFile(build: LlamaBuild | undefined, flags: string[]): { readonly server: LlamaServer } {
  let server: LlamaServer | undefined;
  beforeAll(async () => {
    if (build) server = await startLlamaServer(build, flags);
  }, 90_000);
  afterAll(async () => {
    await server?.stop();
    server = undefined;
  });
  return {
    get server() {
      if (!server) throw new Error("llama-server is started for the tests: use it inside one");
      return server;
    },
  };
}
