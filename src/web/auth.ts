import type { IncomingMessage } from "node:http";
import { secretsEqual, sessionValue } from "./token.js";

/** The cookie's name carries the port: browsers share cookies across ports of one host. */
export function cookieName(port: number): string {
  return `pincer_session_${port}`;
}

export function parseCookies(header: string | undefined): Map<string, string> {
  const cookies = new Map<string, string>();
  for (const part of (header ?? "").split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0) cookies.set(part.slice(0, eq).trim(), part.slice(eq + 1).trim());
  }
  return cookies;
}

export type Credential = "cookie" | "bearer" | "none";

/**
 * How the request proves it holds the token: the session cookie (the browser), or an
 * `Authorization: Bearer` header (scripts). A wrong value counts exactly like no value.
 */
export function credentialOf(req: IncomingMessage, token: string, port: number): Credential {
  const cookie = parseCookies(req.headers.cookie).get(cookieName(port));
  if (cookie !== undefined && secretsEqual(cookie, sessionValue(token))) return "cookie";
  const auth = req.headers.authorization;
  if (auth?.startsWith("Bearer ") && secretsEqual(auth.slice(7).trim(), token)) return "bearer";
  return "none";
}

export function sessionCookie(token: string, port: number): string {
  return `${cookieName(port)}=${sessionValue(token)}; HttpOnly; SameSite=Strict; Path=/; Max-Age=31536000`;
}

/**
 * CSRF check for requests that change something. A bearer header is never sent by a browser on
 * its own, so it passes. A cookie must come with proof the request came from this page: an
 * Origin naming the host it was sent to, or the browser's Sec-Fetch-Site saying same-origin.
 * A request with neither (an old browser, a form from a sandboxed frame) is refused.
 */
export function sameOrigin(req: IncomingMessage, credential: Credential): boolean {
  if (credential === "bearer") return true;
  const site = req.headers["sec-fetch-site"];
  if (site !== undefined && site !== "same-origin") return false;
  const origin = req.headers.origin;
  if (origin !== undefined) {
    try {
      const url = new URL(origin);
      return url.protocol === "http:" && url.host === req.headers.host;
    } catch {
      return false;
    }
  }
  return site === "same-origin";
}
