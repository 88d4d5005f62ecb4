import { pipeline, type Readable, type Transform } from "node:stream";
import { createBrotliDecompress, createGunzip, createInflate } from "node:zlib";
import { request } from "undici";
import { ToolError } from "../tool.js";
import { type AddressPolicy, checkTarget } from "./address-policy.js";
import { BlockedAddressError, createPinnedAgent, type Resolver } from "./pinned-agent.js";

export interface FetchLimits {
  /** The whole fetch, redirects and body included. */
  timeoutMs: number;
  /** Decompressed body bytes kept; the rest is cut, not read. */
  maxBytes: number;
  maxRedirects: number;
}

export interface FetchDeps {
  policy: AddressPolicy;
  limits: FetchLimits;
  userAgent: string;
  /** Tests resolve names from their own table; the daemon uses the system's (dns.lookup). */
  resolve?: Resolver;
  /** Tests trust their own certificate authority; the daemon uses Node's bundle. */
  ca?: string | Buffer;
}

export interface FetchedPage {
  url: string;
  status: number;
  contentType: string | undefined;
  body: Buffer;
  /** Why the body is incomplete: "size" (more than maxBytes) or "time" (the deadline came mid-body). */
  cut?: "size" | "time";
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/**
 * GETs a URL through the pinned agent, following at most `maxRedirects` redirects, each one
 * checked like the first URL. Never throws anything but a ToolError worded for the model (and the caller's abort).
 */
export async function fetchUrl(raw: string, deps: FetchDeps, signal: AbortSignal): Promise<FetchedPage> {
  const { limits } = deps;
  const deadline = AbortSignal.timeout(limits.timeoutMs);
  const combined = AbortSignal.any([signal, deadline]);
  const agent = createPinnedAgent(deps.policy, limits.timeoutMs, deps.resolve, deps.ca);
  let current = raw;
  let base: URL | undefined;
  try {
    for (let hop = 0; ; hop++) {
      const target = checkTarget(current, deps.policy, base);
      if (!target.allowed) throw new ToolError(hop === 0 ? target.reason : `a redirect was refused: ${target.reason}`);
      const url = target.url;
      const response = await request(url, {
        dispatcher: agent,
        method: "GET",
        signal: combined,
        headers: {
          "user-agent": deps.userAgent,
          accept: "text/html,application/xhtml+xml,application/json;q=0.9,text/*;q=0.8,*/*;q=0.5",
          "accept-encoding": "gzip, deflate, br",
        },
      }).catch((err: unknown) => {
        throw explain(err, url, signal, deadline, limits);
      });
      const location = header(response.headers, "location");
      if (REDIRECTS.has(response.statusCode) && location) {
        discard(response.body);
        if (hop >= limits.maxRedirects) throw new ToolError(`${raw} redirected more than ${limits.maxRedirects} times`);
        current = location;
        base = url;
        continue;
      }
      const read = await readCapped(response.body, header(response.headers, "content-encoding"), limits.maxBytes).catch(
        (err: unknown) => {
          if (deadline.aborted && !signal.aborted && err instanceof PartialBody)
            return { ...err.partial, cut: "time" as const };
          throw explain(err instanceof PartialBody ? err.cause : err, url, signal, deadline, limits);
        },
      );
      return {
        url: url.href,
        status: response.statusCode,
        contentType: header(response.headers, "content-type"),
        body: read.body,
        cut: read.cut,
      };
    }
  } finally {
    agent.destroy().catch(() => {});
  }
}

function header(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** Carries what was read before the body failed, so a deadline mid-body still returns the start. */
class PartialBody extends Error {
  constructor(
    readonly partial: { body: Buffer; cut?: "size" | "time" },
    override readonly cause: unknown,
  ) {
    super("body failed");
  }
}

/**
 * Reads at most `maxBytes` of the decoded body, then stops reading (and so stops downloading).
 * Decompression happens here, chunk by chunk, so a small gzip bomb costs at most maxBytes.
 */
async function readCapped(
  body: Readable,
  encoding: string | undefined,
  maxBytes: number,
): Promise<{ body: Buffer; cut?: "size" | "time" }> {
  let decoder: Transform | undefined;
  try {
    decoder = decoderFor(encoding);
  } catch (err) {
    discard(body);
    throw err;
  }
  const stream: Readable = decoder ? pipeline(body, decoder, () => {}) : body;
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of stream) {
      const buffer = chunk as Buffer;
      if (size + buffer.length > maxBytes) {
        chunks.push(buffer.subarray(0, maxBytes - size));
        return { body: Buffer.concat(chunks), cut: "size" };
      }
      chunks.push(buffer);
      size += buffer.length;
    }
    return { body: Buffer.concat(chunks) };
  } catch (err) {
    throw new PartialBody({ body: Buffer.concat(chunks) }, err);
  } finally {
    discard(stream);
    discard(body);
  }
}

/** Stops a body without reading the rest; the "aborted" error that follows is expected. */
function discard(stream: Readable): void {
  stream.on("error", () => {});
  stream.destroy();
}

function decoderFor(encoding: string | undefined): Transform | undefined {
  const value = (encoding ?? "").trim().toLowerCase();
  if (value === "" || value === "identity") return undefined;
  if (value === "gzip" || value === "x-gzip") return createGunzip();
  if (value === "deflate") return createInflate();
  if (value === "br") return createBrotliDecompress();
  throw new ToolError(`the server sent the body in an encoding web_fetch cannot read (${value})`);
}

function explain(err: unknown, url: URL, signal: AbortSignal, deadline: AbortSignal, limits: FetchLimits): unknown {
  if (signal.aborted) return signal.reason;
  if (err instanceof ToolError) return err;
  const blocked = findCause(err, (e) => e instanceof BlockedAddressError);
  if (blocked) return new ToolError(blocked.message);
  if (deadline.aborted) return new ToolError(`${url.href} did not answer within ${limits.timeoutMs / 1000} s`);
  const cause = findCause(err, (e) => "code" in e) ?? (err as Error);
  const code = "code" in cause ? ` (${String(cause.code)})` : "";
  return new ToolError(`could not fetch ${url.href}: ${cause.message}${code}`);
}

function findCause(err: unknown, test: (e: Error) => boolean): Error | undefined {
  for (let e = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (test(e)) return e;
    if (e instanceof AggregateError) {
      const inner = e.errors.find((x) => x instanceof Error && test(x));
      if (inner) return inner;
    }
  }
  return undefined;
}
