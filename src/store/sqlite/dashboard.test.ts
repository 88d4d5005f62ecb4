import { rmSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { tempHome } from "../../../test/helpers/app.js";
import type { Store, StoredMessage } from "../store.js";
import { closeDatabase, type Database, openDatabase } from "./database.js";
import { openSqliteStore } from "./sqlite-store.js";

let home: string | undefined;
let db: Database | undefined;

afterEach(() => {
  if (db) closeDatabase(db);
  if (home) rmSync(home, { recursive: true, force: true });
  db = undefined;
  home = undefined;
});

function stores() {
  home = tempHome("pincer-dashboard-");
  db = openDatabase(join(home, "pincer.db"));
  return {
    conversations: openSqliteStore(db).conversations,
    audit: openSqliteStore(db).audit,
    queries: openSqliteStore(db).dashboard,
  };
}

/** The clock's next millisecond: the steps below must not share one (times are stored in ms). */
function nextMs(): number {
  const start = Date.now();
  while (Date.now() === start) {
    // spin: at most a millisecond
  }
  return Date.now();
}

/** One turn as the worker stores it: the user message (received earlier) and the model's reply with a tool call. */
function turn(receivedAt: number, tool: string): StoredMessage[] {
  return [
    { role: "user", content: `please ${tool}`, createdAt: receivedAt },
    { role: "assistant", content: null, toolCalls: [{ id: "1", name: tool, arguments: "{}" }], createdAt: Date.now() },
    { role: "tool", content: "done", toolCallId: "1", createdAt: Date.now() },
    { role: "assistant", content: `did ${tool}`, createdAt: Date.now() },
  ];
}

const call = (tool: string) => ({ sessionKey: "telegram:42", tool, arguments: "{}", result: "done", durationMs: 1 });
const tools = async (queries: Store["dashboard"]) =>
  (await queries.history("telegram:42")).filter((e) => e.kind === "tool").map((e) => e.tool);

describe("the control page's history of a conversation", () => {
  it("shows the tool calls of a new chat's first turn (its conversation is created when the turn is stored)", async () => {
    const { conversations, audit, queries } = stores();
    const receivedAt = Date.now();
    expect(await conversations.recent("telegram:42", 1000)).toEqual([]);
    nextMs();
    await audit.record(call("cron"));
    nextMs();
    await conversations.append("telegram:42", turn(receivedAt, "cron"));
    expect(await tools(queries)).toEqual(["cron"]);
  });

  it("after /new, leaves out the tool calls of the conversation before, even for a message that waited behind /new", async () => {
    const { conversations, audit, queries } = stores();
    await conversations.append("telegram:42", turn(Date.now(), "read_file"));
    // A message arrives while the previous turn still runs its tool; then /new; then its turn.
    const waitedAt = nextMs();
    nextMs();
    await audit.record(call("read_file"));
    nextMs();
    await conversations.archive("telegram:42");
    nextMs();
    await audit.record(call("exec"));
    nextMs();
    await conversations.append("telegram:42", turn(waitedAt, "exec"));
    expect(await tools(queries)).toEqual(["exec"]);
  });
});
