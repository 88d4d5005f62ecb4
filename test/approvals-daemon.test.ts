/**
 * An approval survives the daemon: the built `pincer gateway` on the fake Bot API, killed with
 * SIGKILL while a command waits for its tap and started again on the same PINCER_HOME.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { gatewayOnFakes, killHard } from "./helpers/daemon.js";

const fakes = gatewayOnFakes();

/** Whether the daemon's outbox has the prompt (a reply with buttons) as sent, read beside it. */
function promptRecorded(home: string): boolean {
  const db = new Database(join(home, "pincer.db"), { readonly: true, fileMustExist: true });
  try {
    return (
      db.prepare("SELECT 1 FROM outbox WHERE status = 'sent' AND payload LIKE '%\"buttons\"%'").get() !== undefined
    );
  } catch {
    return false;
  } finally {
    db.close();
  }
}

describe("a pending approval across a crash", () => {
  it("the restarted daemon asks no second time, and the old prompt's button still runs the command once", async () => {
    const home = fakes.home("pincer-approvals-daemon-");
    writeFileSync(join(home, "config.json"), JSON.stringify({ approvals: { exec: "ask" } }));
    fakes.model.respond((request) => {
      const last = request.messages.at(-1);
      if (last?.role === "tool") return { content: `tool said: ${last.content}` };
      return { toolCalls: [{ name: "exec", arguments: { command: "echo run >> runs.txt; cat runs.txt" } }] };
    });
    const first = fakes.gateway(home);
    fakes.say("run it");
    const { telegram } = fakes;
    const prompt = await fakes.until(() => telegram.sent.find((m) => m.keyboard?.length), "the prompt", 20_000);
    // Killed once the prompt is recorded as sent: a kill before that is the delivery guarantee's one
    // exception (the prompt posted again), not what this test is about.
    await fakes.until(() => promptRecorded(home), "the prompt recorded as sent", 20_000);
    await killHard(first);

    fakes.gateway(home);
    // The resumed turn asks the model nothing new and posts no second prompt; the same button works.
    const tap = telegram.tap(prompt, "Allow once", { id: 42, is_bot: false, first_name: "Ada" });
    await fakes.until(() => telegram.answers.get(tap), "the tap answered", 20_000);
    expect(telegram.answers.get(tap)).toEqual({ text: "Allowed once." });
    await fakes.until(() => telegram.sent.find((m) => m.text.startsWith("tool said:")), "the answer", 20_000);
    expect(readFileSync(join(home, "workspace", "runs.txt"), "utf8")).toBe("run\n");
    expect(telegram.sent.filter((m) => m.keyboard?.length)).toHaveLength(0);
    expect(telegram.sent.filter((m) => m.text.includes("echo run >> runs.txt"))).toHaveLength(1);
    expect(fakes.model.requests).toHaveLength(2);
  });
});
