import { afterAll, beforeAll } from "vitest";
import { hasPostgres, startPostgres, type TestPostgres } from "./postgres.js";

export type Engine = "SQLite" | "PostgreSQL";

/** The store engines this machine can run a scenario on: both where PostgreSQL is installed (else it skips loudly). */
export const ENGINES: Engine[] = hasPostgres() ? ["SQLite", "PostgreSQL"] : ["SQLite"];

/**
 * The environment that puts an app on `engine`: for PostgreSQL a fresh database on a server started for the enclosing
 * describe (PINCER_DATABASE_URL, which is clustered mode in one process); for SQLite nothing (the file in PINCER_HOME).
 * Call inside `describe.each(ENGINES)`; `env()` inside a test.
 */
export function engineEnv(engine: Engine): { env(): Promise<Record<string, string>> } {
  let server: TestPostgres | undefined;
  if (engine === "PostgreSQL") {
    beforeAll(async () => {
      server = await startPostgres();
    }, 90_000);
    afterAll(() => server?.stop());
  }
  return {
    async env(): Promise<Record<string, string>> {
      return server ? { PINCER_DATABASE_URL: await server.newDatabase() } : {};
    },
  };
}
