import { Switchboard } from "../../src/bus/switchboard.js";
import { openSqliteStore } from "../../src/store/sqlite/sqlite-store.js";

/** A bus journaling into the real SQLite store, kept in memory: for tests whose bus is only a bystander. */
export function testBus(): Switchboard {
  return new Switchboard({ journal: openSqliteStore(":memory:").journal });
}
