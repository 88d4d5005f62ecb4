/**
 * Issue 36, point 2: spellings that ran past `approvals.exec: "unlisted"` with `exec.allowPatterns`, through the
 * built `pincer gateway` on the fake Bot API with the real bwrap. Each must be asked about, and nothing of it runs
 * when the answer is no; a listed command still runs unasked.
 */
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { gatewayOnFakes, USER } from "./helpers/daemon.js";
import { hasSystemPackage } from "./helpers/system-packages.js";

const bwrap = hasSystemPackage("bwrap", "bubblewrap");
const fakes = gatewayOnFakes({ PINCER_SANDBOX: "bwrap" });

const SPELLINGS = [
  "echo $(( $(touch x) 0 ))",
  "echo a\\ #;touch x",
  "echo hi; case x in x) touch x;; esac",
  "echo `touch x`",
  "echo a\\\n#b; touch x",
  "echo $'\\' ; touch x ; #'",
];

describe.skipIf(!bwrap)("the allowlist of approvals.exec unlisted, in the daemon", () => {
  it("asks about each spelling that hides a command, runs nothing of it on Deny, and runs a listed one unasked", async () => {
    const home = fakes.home("pincer-allowlist-");
    writeFileSync(
      join(home, "config.json"),
      JSON.stringify({ approvals: { exec: "unlisted" }, exec: { allowPatterns: ["^echo\\b"] } }),
    );
    // The model runs the command the user names by number, then repeats what the tool said.
    const commands = ["echo listed", ...SPELLINGS];
    fakes.model.respond((request) => {
      const last = request.messages.at(-1);
      if (last?.role === "tool") return { content: `tool said: ${last.content}` };
      const said = String(request.messages.findLast((m) => m.role === "user")?.content ?? "");
      return { toolCalls: [{ name: "exec", arguments: { command: commands[Number(/\d+/.exec(said)?.[0])] } }] };
    });
    fakes.gateway(home);
    const { telegram } = fakes;
    const ada = { id: USER, is_bot: false, first_name: "Ada" };

    fakes.say("run 0");
    await fakes.until(() => telegram.sent.find((m) => m.text === "tool said: listed"), "the listed command", 30_000);
    expect(telegram.sent.filter((m) => m.keyboard?.length)).toHaveLength(0);

    for (const [i, command] of SPELLINGS.entries()) {
      fakes.say(`run ${i + 1}`);
      const prompt = await fakes.until(
        () => telegram.sent.filter((m) => m.text.includes("Approval needed"))[i],
        `the prompt for ${JSON.stringify(command)}`,
        30_000,
      );
      expect(prompt.text).toContain(command);
      telegram.tap(prompt, "Deny", ada);
      await fakes.until(
        () => telegram.sent.filter((m) => m.text.startsWith("tool said: Error: denied by the user."))[i],
        "the denial",
        30_000,
      );
    }
    expect(existsSync(join(home, "workspace", "x"))).toBe(false);
  }, 120_000);
});
