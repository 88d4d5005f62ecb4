import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { CallToolResult, Tool as McpTool } from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "pino";
import { coalesced } from "../../coalesced.js";
import type { McpServerFileSettings } from "../../config/file-schema.js";
import { ToolError } from "../tool.js";
import type * as Sdk from "./sdk.js";
import type { ProcessGroupTransport } from "./stdio-transport.js";

/** `connectTimeoutMs` bounds `initialize` and `tools/list`; the retry delay doubles with each failure up to retryMaxMs. */
export const DEFAULT_TIMING = { connectTimeoutMs: 60_000, retryInitialMs: 1000, retryMaxMs: 5 * 60_000 };
export type Timing = typeof DEFAULT_TIMING;

/** A connection that stayed up this long resets the backoff; a server crashing in a loop never does. */
const STABLE_MS = 60_000;
/** Hostile or broken pagination (a cursor that never ends) stops here. */
const MAX_LIST_PAGES = 20;
const CLIENT_INFO = { name: "pincer", version: "0.1.0" };

interface Opened {
  client: Client;
  sdk: typeof Sdk;
  group?: ProcessGroupTransport;
}

/** One MCP server: connects in the background, reconnects with backoff, follows its tool list. */
export class McpConnection {
  state: "connecting" | "connected" | "unavailable" | "stopped" = "connecting";
  error?: string;
  /** The names its tools are registered under; warnings say why some are not offered. */
  registered: string[] = [];
  warnings: string[] = [];
  private current?: Opened;
  /** Still in `initialize`: stopping ends it too, or its process outlives pincer until the connect timeout. */
  private opening?: Omit<Opened, "sdk">;
  private generation = 0;
  private failures = 0;
  private connectedAt = 0;
  private retryTimer?: NodeJS.Timeout;
  private stopped = false;
  private firstAttempt?: () => void;
  readonly firstAttemptDone = new Promise<void>((resolve) => {
    this.firstAttempt = resolve;
  });

  constructor(
    readonly name: string,
    readonly settings: McpServerFileSettings,
    /** `onTools` gets the whole list each time it is read (at connect and on list_changed). */
    private readonly events: { onTools(tools: McpTool[]): void; onState(): void },
    private readonly log: Logger,
    private readonly timing: Timing,
  ) {}

  get pid(): number | undefined {
    return this.current?.group?.pid;
  }

  async close(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    this.generation++;
    const closing = [this.current, this.opening];
    this.current = this.opening = undefined;
    this.setState("stopped");
    this.firstAttempt?.();
    await Promise.all(closing.map((c) => c?.client.close().catch(() => {})));
  }

  /** Synchronous last resort when pincer exits without closing (a crash): no orphan processes. */
  killNow(): void {
    this.current?.group?.kill();
    this.opening?.group?.kill();
  }

  async call(tool: string, args: Record<string, unknown>, signal: AbortSignal, timeoutMs: number) {
    const { current, generation } = this;
    if (!current || this.state !== "connected") {
      throw new ToolError(
        `server ${this.name} is unavailable${this.error ? ` (${this.error})` : ""}; pincer keeps reconnecting, try again later.`,
      );
    }
    try {
      const options = { signal, timeout: timeoutMs };
      return (await current.client.callTool({ name: tool, arguments: args }, undefined, options)) as CallToolResult;
    } catch (err) {
      if (signal.aborted) throw err;
      const { ErrorCode, McpError } = current.sdk;
      if (err instanceof McpError && err.code === ErrorCode.RequestTimeout) {
        throw new ToolError(`server ${this.name} did not answer within ${timeoutMs / 1000} s.`);
      }
      if (err instanceof McpError && err.code !== ErrorCode.ConnectionClosed) {
        throw new ToolError(`server ${this.name} refused the call: ${err.message}`);
      }
      // The transport failed (an HTTP server went away, the process died): reconnect in the background.
      this.lost(generation, err);
      // When the transport closed first, `error` already says why (the process's last words).
      throw new ToolError(
        `server ${this.name} is unavailable (${this.error ?? describe(err)}); pincer is reconnecting, try again later.`,
      );
    }
  }

  /** Never rejects: a failure schedules the next attempt. */
  async connect(): Promise<void> {
    const generation = ++this.generation;
    this.setState("connecting");
    let opened: Opened | undefined;
    try {
      opened = await this.open(generation);
      if (generation !== this.generation) {
        await opened.client.close().catch(() => {});
        return;
      }
      this.current = opened;
      await this.refresh(generation);
      if (generation !== this.generation) return;
      this.connectedAt = Date.now();
      this.error = undefined;
      this.setState("connected");
      this.log.info({ server: this.name }, "MCP server connected");
    } catch (err) {
      if (opened && this.current !== opened) await opened.client.close().catch(() => {});
      this.lost(generation, err);
    }
    this.firstAttempt?.();
  }

  private async open(generation: number): Promise<Opened> {
    const { settings } = this;
    const sdk = await loadSdk();
    // Closed while the SDK was loading: start no server process for nobody.
    if (generation !== this.generation) throw new Error("the connection was closed");
    const { ErrorCode, McpError } = sdk;
    const connect = async (transport: Transport): Promise<Opened> => {
      const group = transport instanceof sdk.ProcessGroupTransport ? transport : undefined;
      const client = new sdk.Client(CLIENT_INFO, { capabilities: {} });
      // One read at a time: a storm of list_changed notifications costs at most one more.
      const relist = coalesced(() =>
        this.refresh(generation).catch((err) =>
          this.log.warn({ server: this.name, err: describe(err) }, "MCP server's new tool list could not be read"),
        ),
      );
      client.setNotificationHandler(sdk.ToolListChangedNotificationSchema, async () => relist.run());
      this.opening = { client, group };
      try {
        await client.connect(transport, { timeout: this.timing.connectTimeoutMs });
      } catch (err) {
        await client.close().catch(() => {});
        throw err instanceof McpError && err.code === ErrorCode.ConnectionClosed ? new Error(exitReason(group)) : err;
      } finally {
        if (this.opening?.client === client) this.opening = undefined;
      }
      // Set only now, so a failed start reports its own reason rather than "closed".
      client.onclose = () => this.lost(generation, new Error(exitReason(group)));
      return { client, sdk, group };
    };
    if (settings.command) return connect(new sdk.ProcessGroupTransport({ ...settings, command: settings.command }));
    const url = new URL(settings.url as string);
    const requestInit = { headers: settings.headers };
    try {
      return await connect(new sdk.StreamableHTTPClientTransport(url, { requestInit }));
    } catch (err) {
      // Servers from before streamable HTTP answer its POST with 404 or 405 and speak SSE instead.
      const status = err instanceof sdk.StreamableHTTPError ? (err.code ?? 0) : 0;
      if (status < 400 || status >= 500 || generation !== this.generation) throw err;
      this.log.info({ server: this.name, status }, "MCP server does not speak streamable HTTP; trying SSE");
      return connect(new sdk.SSEClientTransport(url, { requestInit }));
    }
  }

  private async refresh(generation: number): Promise<void> {
    const client = this.current?.client;
    if (!client || generation !== this.generation) return;
    const tools: McpTool[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < MAX_LIST_PAGES; page++) {
      const result = await client.listTools(cursor ? { cursor } : undefined, { timeout: this.timing.connectTimeoutMs });
      tools.push(...result.tools);
      cursor = result.nextCursor;
      if (!cursor) break;
    }
    if (generation === this.generation) this.events.onTools(tools);
  }

  private lost(generation: number, err: unknown): void {
    if (generation !== this.generation || this.stopped) return;
    this.generation++;
    void this.current?.client.close().catch(() => {});
    this.current = undefined;
    if (this.connectedAt > 0 && Date.now() - this.connectedAt >= STABLE_MS) this.failures = 0;
    this.connectedAt = 0;
    const delay = Math.min(this.timing.retryMaxMs, this.timing.retryInitialMs * 2 ** this.failures);
    this.failures = Math.min(this.failures + 1, 30);
    this.error = describe(err);
    this.setState("unavailable");
    this.log.warn({ server: this.name, err: this.error, retryInMs: delay }, "MCP server unavailable");
    this.retryTimer = setTimeout(() => void this.connect(), delay).unref();
  }

  private setState(state: McpConnection["state"]): void {
    this.state = state;
    this.events.onState();
  }
}

function exitReason(group: ProcessGroupTransport | undefined): string {
  if (group?.refused) return `pincer closed it: ${group.refused}`;
  const lastLine = group?.stderrTail.trim().split("\n").pop()?.slice(0, 300);
  return lastLine ? `the server exited: ${lastLine}` : "the connection closed";
}

/** The SDK, imported on the first connect; a broken install becomes this server's error, not a crash. */
const loadSdk = (): Promise<typeof Sdk> =>
  import("./sdk.js").catch((err) => {
    const why = `the MCP client library could not be loaded (${describe(err)}); reinstall pincer's dependencies (npm ci)`;
    throw new Error(why, { cause: err });
  });

function describe(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).replace(/\s+/g, " ").slice(0, 300);
}
