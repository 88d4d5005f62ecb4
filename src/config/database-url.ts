import { ConfigError } from "./errors.js";

/** PINCER_DATABASE_URL: unset (embedded SQLite) or `postgres://` (clustered); a bad one never repeats the password. */
export function databaseUrl(raw: string | undefined): string | undefined {
  const value = raw?.trim();
  if (!value) return undefined;
  const example = "postgres://USER:PASSWORD@HOST:5432/DATABASE";
  if (!URL.canParse(value)) {
    throw new ConfigError(`PINCER_DATABASE_URL is not a URL: use ${example}, or unset it for the embedded database.`);
  }
  const url = new URL(value);
  if (url.protocol !== "postgres:" && url.protocol !== "postgresql:") {
    throw new ConfigError(
      `PINCER_DATABASE_URL must start with postgres:// (not ${url.protocol}//): use ${example}, or unset it for the embedded database.`,
    );
  }
  if ((!url.hostname && !url.searchParams.has("host")) || url.pathname.length <= 1) {
    throw new ConfigError(`PINCER_DATABASE_URL must name a host and a database, like ${example}.`);
  }
  return value;
}

/** The server's host, port and database, without user or password (for status lines). */
export function databaseHost(raw: string): string {
  const url = new URL(raw);
  return `${url.host}${url.pathname}`;
}
