import type { IncomingMessage } from "node:http";
import { secretsEqual } from "./token.js";

/**
 * The header the page sends its session in. No cookie is involved: browsers send a host's cookies
 * to every port of it, so a page served by another local user would collect them. A page of
 * another origin cannot add this header either (that needs CORS, which pincer never grants), so
 * no request a foreign page makes the browser send is authorised (no CSRF).
 */
export const SESSION_HEADER = "x-pincer-session";

/** The session a request presents: the header, or for the event stream (EventSource sends no headers) `?session=`. */
export function presentedSession(req: IncomingMessage, url: URL): string | undefined {
  const header = req.headers[SESSION_HEADER];
  if (typeof header === "string") return header;
  return url.pathname === "/api/events" ? (url.searchParams.get("session") ?? undefined) : undefined;
}

/** Scripts send the token itself: `Authorization: Bearer …`. A wrong value counts exactly like none. */
export function bearerMatches(req: IncomingMessage, token: string): boolean {
  const auth = req.headers.authorization;
  return auth?.startsWith("Bearer ") === true && secretsEqual(auth.slice(7).trim(), token);
}
