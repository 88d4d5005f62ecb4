import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { once } from "node:events";
import { setTimeout as delay } from "node:timers/promises";
import { deserializeMessage, serializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import type { McpServerFileSettings } from "../../config/file-schema.js";
import { killProcessGroup as killGroup } from "../exec/run-process.js";

/** What a server inherits from pincer's environment: enough to run, never pincer's secrets. */
const INHERITED_ENV = ["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "TMPDIR"];
/** The last stderr bytes kept, to say why a server died. */
const STDERR_TAIL_BYTES = 2048;
/** One JSON-RPC line longer than this ends the connection (a server flooding stdout). */
const MAX_LINE_BYTES = 16 * 1024 * 1024;

/** Starts the server in its own process group, so closing ends every process it started (an `npx` wrapper's child too),
 * and keeps only a tail of its stderr, so a chatty server cannot flood pincer's log. */
export class ProcessGroupTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  private child?: ChildProcessWithoutNullStreams;
  private readonly lines = new LineSplitter(MAX_LINE_BYTES);
  stderrTail = "";
  private closed = false;
  /** Why pincer dropped the connection itself (a line over the limit). */
  refused?: string;

  constructor(private readonly params: Pick<McpServerFileSettings, "args" | "env" | "cwd"> & { command: string }) {}

  get pid(): number | undefined {
    return this.child?.pid;
  }

  async start(): Promise<void> {
    // A name unset here stays unset there: spawn leaves out undefined values.
    const inherited = Object.fromEntries(INHERITED_ENV.map((key) => [key, process.env[key]]));
    const child = spawn(this.params.command, this.params.args, {
      env: { ...inherited, ...this.params.env },
      cwd: this.params.cwd,
      stdio: ["pipe", "pipe", "pipe"],
      detached: true,
    });
    this.child = child;
    child.stdin.on("error", (err) => this.onerror?.(err));
    child.stdout.on("data", (chunk: Buffer) => this.receive(chunk));
    child.stderr.on("data", (chunk: Buffer) => {
      this.stderrTail = (this.stderrTail + chunk.toString("utf8")).slice(-STDERR_TAIL_BYTES);
    });
    child.on("close", () => {
      // Whatever the server left behind in its group goes with it.
      killGroup(child.pid);
      this.finish();
    });
    await new Promise<void>((resolve, reject) => {
      child.once("spawn", resolve);
      child.once("error", (err) => {
        reject(err);
        this.finish();
      });
    });
  }

  async send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.child?.stdin;
    if (!stdin || this.closed) throw new Error("not connected");
    if (!stdin.write(serializeMessage(message))) await once(stdin, "drain");
  }

  /** Ends stdin (the polite way), then SIGTERM, then SIGKILL, each to the whole process group. */
  async close(): Promise<void> {
    const child = this.child;
    if (!child || child.pid === undefined) return this.finish();
    const exited = child.exitCode !== null || child.signalCode !== null;
    const gone = exited ? Promise.resolve() : once(child, "close").then(() => undefined);
    child.stdin.end();
    if (!exited) await settleWithin(gone, 1000);
    killGroup(child.pid, "SIGTERM");
    if (!(await settleWithin(gone, 1000))) killGroup(child.pid);
    this.finish();
  }

  kill(): void {
    killGroup(this.child?.pid);
  }

  private receive(chunk: Buffer): void {
    let lines: string[];
    try {
      lines = this.lines.push(chunk);
    } catch (err) {
      this.refused = (err as Error).message;
      this.onerror?.(err as Error);
      void this.close();
      return;
    }
    for (const line of lines) {
      let message: JSONRPCMessage;
      try {
        message = deserializeMessage(line);
      } catch (err) {
        // A line that is not JSON-RPC (a stray console.log): reported, skipped.
        this.onerror?.(err as Error);
        continue;
      }
      this.onmessage?.(message);
    }
  }

  private finish(): void {
    if (this.closed) return;
    this.closed = true;
    this.lines.clear();
    this.onclose?.();
  }
}

/** Unlike the SDK's ReadBuffer it joins an unfinished line's pieces once: megabytes without a newline cost linear
 * time, not a copy of the whole buffer per chunk. */
export class LineSplitter {
  private pending: Buffer[] = [];
  private size = 0;

  constructor(private readonly maxBytes: number) {}

  /** The lines this chunk completes; throws once an unfinished line passes the limit. */
  push(chunk: Buffer): string[] {
    const lines: string[] = [];
    let start = 0;
    for (let newline = chunk.indexOf(10); newline !== -1; newline = chunk.indexOf(10, start)) {
      const tail = chunk.subarray(start, newline);
      const line = this.pending.length > 0 ? Buffer.concat([...this.pending, tail]) : tail;
      this.clear();
      if (line.length > this.maxBytes) throw new Error(`the server sent a line over ${this.maxBytes} bytes`);
      lines.push(line.toString("utf8").replace(/\r$/, ""));
      start = newline + 1;
    }
    if (start < chunk.length) this.pending.push(chunk.subarray(start));
    this.size += chunk.length - start;
    if (this.size <= this.maxBytes) return lines;
    this.clear();
    throw new Error(`the server sent a line over ${this.maxBytes} bytes`);
  }

  clear(): void {
    this.pending = [];
    this.size = 0;
  }
}

function settleWithin(promise: Promise<void>, ms: number): Promise<boolean> {
  return Promise.race([promise.then(() => true), delay(ms, false, { ref: false })]);
}
