import { pipeline, type Readable, type Transform } from "node:stream";
import { createBrotliDecompress, createGunzip, createInflate } from "node:zlib";
import { request } from "undici";
import type { Config } from "../../config/config.js";
import { ToolError } from "../tool.js";
import { type AddressPolicy, checkTarget } from "./address-policy.js";
import { BlockedAddressError, createPinnedAgent, type Resolver } from "./pinned-agent.js";

/** timeoutSeconds: the whole fetch, redirects and body included; maxBytes: decoded body bytes kept (the rest unread). */
export type FetchDeps = Pick<Config["web"], "timeoutSeconds" | "maxBytes" | "maxRedirects" | "userAgent"> & {
  policy: AddressPolicy;
  /** Tests resolve names from their own table; the daemon uses the system's (dns.lookup). */
  resolve?: Resolver;
  /** Tests trust their own certificate authority; the daemon uses Node's bundle. */
  ca?: string | Buffer;
};

/** `cut`: why the body is incomplete, "size" (over maxBytes) or "time" (the deadline came mid-body). */
type Body = { body: Buffer; cut?: "size" | "time"; failed?: unknown };

const USER_AGENT = "Mozilla/5.0 (compatible; pincer/0.1; self-hosted assistant)";
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/** GETs a URL via the pinned agent; each of at most `maxRedirects` redirects is checked like the first URL. */
export async function fetchUrl(raw: string, deps: FetchDeps, signal: AbortSignal) {
  const timeoutMs = deps.timeoutSeconds * 1000;
  const deadline = AbortSignal.timeout(timeoutMs);
  const agent = createPinnedAgent(deps.policy, timeoutMs, deps.resolve, deps.ca);
  const explain = (err: unknown, url: URL) => {
    if (signal.aborted) return signal.reason;
    if (err instanceof ToolError) return err;
    const blocked = findCause(err, (e) => e instanceof BlockedAddressError);
    if (blocked) return new ToolError(blocked.message);
    if (deadline.aborted) return new ToolError(`${url.href} did not answer within ${deps.timeoutSeconds} s`);
    const cause = findCause(err, (e) => "code" in e) ?? (err as Error);
    const code = "code" in cause ? ` (${String(cause.code)})` : "";
    return new ToolError(`could not fetch ${url.href}: ${cause.message}${code}`);
  };
  let current = raw;
  let base: URL | undefined;
  try {
    for (let hop = 0; ; hop++) {
      const target = checkTarget(current, deps.policy, base);
      if (!target.allowed) throw new ToolError(hop === 0 ? target.reason : `a redirect was refused: ${target.reason}`);
      const { url } = target;
      const response = await request(url, {
        dispatcher: agent,
        method: "GET",
        signal: AbortSignal.any([signal, deadline]),
        headers: {
          "user-agent": deps.userAgent ?? USER_AGENT,
          accept: "text/html,application/xhtml+xml,application/json;q=0.9,text/*;q=0.8,*/*;q=0.5",
          "accept-encoding": "gzip, deflate, br",
        },
      }).catch((err: unknown) => {
        throw explain(err, url);
      });
      const header = (name: string) => [response.headers[name]].flat()[0];
      const location = header("location");
      if (REDIRECTS.has(response.statusCode) && location) {
        discard(response.body);
        if (hop >= deps.maxRedirects) throw new ToolError(`${raw} redirected more than ${deps.maxRedirects} times`);
        current = location;
        base = url;
        continue;
      }
      const { failed, ...read } = await readCapped(response.body, header("content-encoding"), deps.maxBytes);
      if (failed !== undefined) {
        if (!deadline.aborted || signal.aborted || failed instanceof ToolError) throw explain(failed, url);
        read.cut = "time";
      }
      return { url: url.href, status: response.statusCode, contentType: header("content-type"), ...read };
    }
  } finally {
    agent.destroy().catch(() => {});
  }
}

/** At most `maxBytes` of the body, decoded chunk by chunk (a gzip bomb costs maxBytes); a failure keeps what came. */
async function readCapped(body: Readable, encoding: string | undefined, maxBytes: number): Promise<Body> {
  const chunks: Buffer[] = [];
  let stream = body;
  let size = 0;
  try {
    const decoder = decoderFor(encoding);
    if (decoder) stream = pipeline(body, decoder, () => {});
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      if (size + chunk.length > maxBytes) {
        chunks.push(chunk.subarray(0, maxBytes - size));
        return { body: Buffer.concat(chunks), cut: "size" };
      }
      chunks.push(chunk);
      size += chunk.length;
    }
    return { body: Buffer.concat(chunks) };
  } catch (failed) {
    return { body: Buffer.concat(chunks), failed: failed ?? new Error("the body failed") };
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

function findCause(err: unknown, test: (e: Error) => boolean): Error | undefined {
  for (let e = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (test(e)) return e;
    if (e instanceof AggregateError) {
      const inner = e.errors.find((x) => x instanceof Error && test(x));
      if (inner) return inner;
    }
  }
}
