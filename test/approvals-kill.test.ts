/**
 * An approval across a crash: the built daemon (`pincer gateway`) killed with SIGKILL while its
 * prompt waits on the chat, then started again on the same PINCER_HOME. The old buttons still
 * decide, no second prompt is posted, and the command runs once.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { tempHome } from "./helpers/app.js";
import { gatewayOnFakes, killHard, USER } from "./helpers/daemon.js";
import { user } from "./helpers/telegram.js";

const fakes = gatewayOnFakes();
const { model, say } = fakes;

/** One value from the daemon's database, read beside it (WAL lets a reader in). */
function read<T>(home: string, sql: string): T | undefined {
  const db = new Database(join(home, "pincer.db"), { readonly: true, fileMustExist: true });
  try {
    return db.prepare(sql).pluck().get() as T | undefined;
  } finally {
    db.close();
  }
}

describe("an approval across a crash", () => {
  it("kill -9 while the prompt waits: after the restart the same buttons work and the command runs once", async () => {
    const home = tempHome("pincer-approval-kill-");
    writeFileSync(join(home, "config.json"), JSON.stringify({ approvals: { exec: "ask" } }));
    model.respond((request) => {
      const last = request.messages.at(-1);
      if (last?.role === "tool") return { content: `tool said: ${last.content}` };
      return { toolCalls: [{ name: "exec", arguments: { command: "echo once >> runs.txt; cat runs.txt" } }] };
    });
    const first = fakes.gateway(home);
    say("go");
    const prompt = await fakes.until(() => fakes.telegram.sent.find((m) => m.keyboard?.length), "the prompt", 30_000);
    await fakes.until(
      () => read<number>(home, "SELECT count(*) FROM outbox WHERE status = 'sent'") === 1,
      "the prompt recorded as sent",
    );
    await killHard(first);
    // Tapped while nothing runs: the update waits for the next getUpdates.
    const tap = fakes.telegram.tap(prompt, "Allow once", user(USER, "Ada"));
    fakes.gateway(home);
    await fakes.until(() => fakes.telegram.answers.get(tap), "the tap answered", 30_000);
    expect(fakes.telegram.answers.get(tap)).toEqual({ text: "Allowed once." });
    await fakes.until(() => fakes.telegram.sent.find((m) => m.text.startsWith("tool said:")), "the answer", 30_000);
    await fakes.until(() => prompt.edits?.length, "the prompt edited", 15_000);
    expect(readFileSync(join(home, "workspace", "runs.txt"), "utf8")).toBe("once\n");
    expect(fakes.telegram.sent.filter((m) => m.keyboard?.length || m.edits?.length)).toEqual([prompt]);
    expect(prompt.edits).toHaveLength(1);
    expect(prompt.keyboard ?? []).toEqual([]);
  }, 90_000);
});
