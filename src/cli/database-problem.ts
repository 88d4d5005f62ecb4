import { databaseHost } from "../config/database-url.js";

type PgError = Error & { code?: string; syscall?: string; severity?: string; errors?: Error[] };

/** What went wrong with a PostgreSQL connection, in its own words (a refused localhost is an AggregateError without a message). */
export function databaseErrorText(err: unknown): string {
  const e = err as PgError;
  return e?.message || e?.errors?.map((inner) => inner.message).join("; ") || e?.code || String(err);
}

/** One sentence, never with the password, for a PINCER_DATABASE_URL that cannot be reached or refuses pincer. */
export function describeDatabaseProblem(err: unknown, url: string | undefined): string | undefined {
  const e = err as PgError;
  if (!url || !e || typeof e !== "object") return undefined;
  const network = ["connect", "getaddrinfo"].includes(e.syscall ?? "") || e.errors?.some((inner) => "syscall" in inner);
  const refused = e.severity === "FATAL";
  const timedOut = /^(timeout expired|Connection terminated due to connection timeout)/.test(e.message ?? "");
  if (!network && !refused && !timedOut) return undefined;
  return `cannot use the database at PINCER_DATABASE_URL (PostgreSQL at ${databaseHost(url)}): ${databaseErrorText(e)}. Check the URL and that the server is running (pincer doctor checks it).`;
}
