/**
 * Issue 36, point 5: "Always allow" covers a command's text, so pincer asks again when files the command obeys change,
 * and HOME in the sandbox is not the workspace. The built `pincer gateway` on the fake Bot API with the real bwrap
 * and git: `git status --short` always allowed, then the file tools (never asked) write a `.gitconfig` and a
 * `.git/config` with core.fsmonitor, the program git runs at each status.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { gatewayOnFakes, USER } from "./helpers/daemon.js";
import { hasSystemPackage } from "./helpers/system-packages.js";

const ready = hasSystemPackage("bwrap", "bubblewrap") && hasSystemPackage("git", "git");
const fakes = gatewayOnFakes({ PINCER_SANDBOX: "bwrap" });

const fsmonitor = (marker: string) => `[core]\n\trepositoryformatversion = 0\n\tfsmonitor = touch ${marker} #\n`;

describe.skipIf(!ready)("Always allow and the files a command obeys, in the daemon", () => {
  it("asks again once .gitconfig or .git/config changed; a .gitconfig in the workspace is not HOME's", async () => {
    const home = fakes.home("pincer-always-");
    const workspace = join(home, "workspace");
    mkdirSync(workspace, { recursive: true });
    execFileSync("git", ["init", "-q", workspace]);
    writeFileSync(join(home, "config.json"), JSON.stringify({ approvals: { exec: "ask" } }));
    // Each user message names a step; the model does it, then repeats what the tool said.
    const steps: Record<string, { name: string; arguments: object }> = {
      status: { name: "exec", arguments: { command: "git status --short; echo HOME=$HOME" } },
      home: { name: "write_file", arguments: { path: ".gitconfig", content: fsmonitor("home-ran") } },
      repo: { name: "write_file", arguments: { path: ".git/config", content: fsmonitor("repo-ran") } },
    };
    fakes.model.respond((request) => {
      const last = request.messages.at(-1);
      if (last?.role === "tool") return { content: `tool said: ${last.content}` };
      const said = String(request.messages.findLast((m) => m.role === "user")?.content ?? "");
      return { toolCalls: [steps[/^\w+/.exec(said)?.[0] ?? ""] ?? steps.status] };
    });
    fakes.gateway(home);
    const { telegram } = fakes;
    const ada = { id: USER, is_bot: false, first_name: "Ada" };
    const prompts = () => telegram.sent.filter((m) => m.text.includes("Approval needed"));
    const answers = () => telegram.sent.filter((m) => m.text.startsWith("tool said:"));
    const step = async (text: string) => {
      const [asked, said] = [prompts().length, answers().length];
      fakes.say(text);
      return fakes.until(
        () => (prompts().length > asked ? prompts().at(-1) : answers().length > said ? "answered" : undefined),
        `a prompt or an answer to "${text}"`,
        30_000,
      );
    };
    const answered = (n: number) => fakes.until(() => answers()[n - 1], `answer ${n}`, 30_000);

    // Always allowed once: the same command runs unasked after that.
    const first = await step("status");
    expect(first).not.toBe("answered");
    telegram.tap(first as Exclude<typeof first, string>, "Always allow", ada);
    expect((await answered(1)).text).toMatch(/^HOME=\/tmp$/m);
    expect(await step("status")).toBe("answered");

    // A .gitconfig in the workspace: asked again, and once allowed it is not git's global config (HOME is /tmp).
    expect(await step("home")).toBe("answered");
    const again = await step("status");
    expect(again).not.toBe("answered");
    const prompt = again as Exclude<typeof again, string>;
    expect(prompt.text).toContain("files it obeys changed since: .gitconfig");
    // A person reads the prompt before tapping: a change within the clock's slack (50 ms) of the grant counts as after
    // it, so on a fast machine an instant tap would be asked about once more.
    const written = statSync(join(workspace, ".gitconfig")).ctimeMs;
    await fakes.until(() => Date.now() > written + 200 || undefined, "the prompt to have been read", 5_000);
    telegram.tap(prompt, "Always allow", ada);
    await answered(4);
    expect(existsSync(join(workspace, "home-ran"))).toBe(false);
    expect(await step("status")).toBe("answered");

    // The repository's own .git/config: asked again, and nothing runs on Deny.
    expect(await step("repo")).toBe("answered");
    const third = await step("status");
    expect(third).not.toBe("answered");
    expect((third as Exclude<typeof third, string>).text).toContain("files it obeys changed since: .git/config");
    telegram.tap(third as Exclude<typeof third, string>, "Deny", ada);
    await fakes.until(() => answers().find((m) => m.text.includes("denied by the user")), "the denial", 30_000);
    expect(existsSync(join(workspace, "repo-ran"))).toBe(false);
  }, 120_000);
});
