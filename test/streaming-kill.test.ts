/**
 * A streamed reply across a crash: the built daemon (`pincer gateway`) killed with SIGKILL while
 * its draft is on the chat, then started again on the same PINCER_HOME. The next start finishes
 * that draft; the chat never gets a second copy.
 */
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { tempHome } from "./helpers/app.js";
import { gatewayOnFakes, killHard } from "./helpers/daemon.js";

const fakes = gatewayOnFakes();
const { model, say } = fakes;

const ANSWER = "Here is **the plan**: first we look, then we act, and then we look again to be sure.";
const FINAL = "Here is the plan: first we look, then we act, and then we look again to be sure.";

/** One value from the daemon's database, read beside it (WAL lets a reader in). */
function read<T>(home: string, sql: string): T | undefined {
  const db = new Database(join(home, "pincer.db"), { readonly: true, fileMustExist: true });
  try {
    return db.prepare(sql).pluck().get() as T | undefined;
  } catch {
    return undefined;
  } finally {
    db.close();
  }
}

describe("a streamed reply across a crash", () => {
  it("killed mid-stream: the restarted daemon edits the draft it had into the reply, and posts nothing else", async () => {
    const home = tempHome("pincer-stream-kill-");
    // Drafts as messages (a Bot API without native drafts): their ids are what must survive.
    fakes.telegram.failNext(
      "sendMessageDraft",
      { status: 400, description: "Bad Request: method is not available" },
      50,
    );
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    const first = fakes.gateway(home);
    // An endpoint's first reply after a start is not streamed (it shows whether the template opens <think>).
    model.enqueue({ content: "ready" });
    say("hello");
    await fakes.until(() => fakes.telegram.sent[0], "the first reply");
    await fakes.until(
      () => read<number>(home, "SELECT count(*) FROM outbox WHERE status = 'sent'") === 1,
      "the first reply recorded as sent",
    );
    fakes.telegram.sent.length = 0;
    model.requests.length = 0;
    model.enqueue({ content: ANSWER, holdAfter: { chunks: 6, until: held } });
    say("what is the plan?");
    const draft = await fakes.until(() => fakes.telegram.sent[0], "the draft", 30_000);
    await fakes.until(
      () => read<string>(home, "SELECT draft FROM inbox WHERE draft IS NOT NULL"),
      "the draft's id stored",
    );
    await killHard(first);
    release();
    model.enqueue({ content: ANSWER });
    fakes.gateway(home);
    await fakes.until(() => draft.edits?.at(-1) === FINAL, "the draft edited into the reply", 30_000);
    await fakes.until(
      () => read<number>(home, "SELECT count(*) FROM outbox WHERE status = 'sent'") === 2,
      "the reply recorded as sent",
    );
    expect(read<number>(home, "SELECT count(*) FROM outbox WHERE status != 'sent'")).toBe(0);
    expect(fakes.telegram.sent).toHaveLength(1);
    expect(draft.deleted).toBeFalsy();
    expect(model.requests).toHaveLength(2);
  }, 90_000);
});
