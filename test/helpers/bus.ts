import { MessageBus } from "../../src/bus/bus.js";
import { openSqliteStore } from "../../src/store/sqlite/sqlite-store.js";

/** A bus journaling into the real SQLite store, kept in memory: for tests whose bus is only a bystander. */
export function testBus(): MessageBus {
  return new MessageBus({ journal: openSqliteStore(":memory:").journal });
}
