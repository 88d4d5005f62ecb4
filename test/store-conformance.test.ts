import { rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe } from "vitest";
import { openPostgresStore } from "../src/store/postgres/postgres-store.js";
import { openSqliteStore } from "../src/store/sqlite/sqlite-store.js";
import { tempHome } from "./helpers/app.js";
import { hasPostgres, startPostgres, type TestPostgres } from "./helpers/postgres.js";
import { describeStoreConformance } from "./helpers/store-conformance.js";

const homes: string[] = [];
afterAll(() => {
  for (const home of homes) rmSync(home, { recursive: true, force: true });
});

describeStoreConformance("SQLite", async () => {
  const home = tempHome("pincer-store-");
  homes.push(home);
  return async (options) => openSqliteStore(join(home, "pincer.db"), options);
});

describe.skipIf(!hasPostgres())("on PostgreSQL", () => {
  let server: TestPostgres | undefined;
  beforeAll(async () => {
    server = await startPostgres();
  }, 60_000);
  afterAll(() => server?.stop());
  describeStoreConformance("PostgreSQL", async () => {
    const url = await (server as TestPostgres).newDatabase();
    return async (options) => openPostgresStore(url, options);
  });
});
