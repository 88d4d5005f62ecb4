import type { IncomingMessage, ServerResponse } from "node:http";
import { isLoopback } from "../config/config.js";
import { parseJson } from "../llm/text-tool-calls.js";
import { secretsEqual } from "./token.js";

const MAX_BODY = 64 * 1024;

const BASE_HEADERS = {
  "referrer-policy": "no-referrer",
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "cache-control": "no-store",
  "content-security-policy": "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
};

export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export function send(res: ServerResponse, status: number, type: string, body: string | Buffer, headers = {}): void {
  res.writeHead(status, { ...BASE_HEADERS, "content-type": type, ...headers });
  res.end(body);
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  send(res, status, "application/json; charset=utf-8", JSON.stringify(body));
}

/** Scripts send the token itself: `Authorization: Bearer …`. A wrong value counts exactly like none. */
export function bearerMatches(req: IncomingMessage, token: string): boolean {
  const auth = req.headers.authorization;
  return auth?.startsWith("Bearer ") === true && secretsEqual(auth.slice(7).trim(), token);
}

/** The Host header names a loopback address (any port): 127.x, [::1] or localhost. */
export function isLoopbackHost(host: string | undefined): boolean {
  const m = /^(?:\[([^\]]+)\]|([^:]+))(?::\d+)?$/.exec(host ?? "");
  return m !== null && isLoopback((m[1] ?? m[2]).toLowerCase());
}

export async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  if (!/^application\/json\b/i.test(req.headers["content-type"] ?? ""))
    throw new HttpError(415, "send application/json");
  if (Number(req.headers["content-length"] ?? 0) > MAX_BODY) throw new HttpError(413, "request body too large");
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY) throw new HttpError(413, "request body too large");
    chunks.push(chunk);
  }
  const value = parseJson(Buffer.concat(chunks).toString("utf8"));
  if (value && typeof value === "object" && !Array.isArray(value)) return value as Record<string, unknown>;
  throw new HttpError(400, "the body must be a JSON object");
}

/** Reads a request's string fields: `name`, `least` to `max` characters (spaces alone count as none), or a 400. */
export type TextField = (name: string, max?: number, least?: number) => string;

export function textFields(body: Record<string, unknown>): TextField {
  return (name, max = 200, least = 1) => {
    const value = body[name];
    if (typeof value !== "string" || value.trim().length < least || value.length > max) {
      throw new HttpError(400, `"${name}" must be a string of ${least} to ${max} characters`);
    }
    return value;
  };
}
