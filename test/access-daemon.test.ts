import { describe, expect, it } from "vitest";
import type { FakeOpenAI } from "./fakes/openai-server.js";
import { tempHome } from "./helpers/app.js";
import { gatewayOnFakes, killHard, pincer } from "./helpers/daemon.js";

/**
 * Access and crash safety of the built daemon (`pincer gateway`), talking to the fake Bot API
 * and the fake model, killed with SIGKILL and started again on the same PINCER_HOME.
 */

const fakes = gatewayOnFakes();
const { model, gateway, say, until } = fakes;

const lastText = (r: FakeOpenAI["requests"][number]) => String(r.messages.at(-1)?.content ?? "");
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("the daemon under attack", () => {
  it("sets aside a message whose turn killed pincer twice, with one notice, and keeps answering", async () => {
    const home = tempHome();
    // The "poison" turn never ends: the daemon is killed during it (as if the turn had crashed it).
    model.respond((request) =>
      lastText(request).includes("poison") ? new Promise(() => {}) : { content: `re: ${lastText(request)}` },
    );
    const poisonRequests = () => model.requests.filter((r) => lastText(r).includes("poison")).length;

    const first = gateway(home);
    say("poison");
    await until(() => poisonRequests() === 1, "the first turn");
    await killHard(first);

    const second = gateway(home);
    await until(() => poisonRequests() === 2, "the second turn (resumed after the crash)");
    await killHard(second);

    const third = gateway(home);
    const notice = await until(
      () => fakes.telegram.sent.find((m) => m.text.includes("set your message aside")),
      "the notice",
    );
    expect(notice.chatId).toBe("42");
    say("hello again");
    await until(() => fakes.telegram.sent.find((m) => m.text === "re: hello again"), "the next answer");
    expect(poisonRequests()).toBe(2);
    await killHard(third);

    // Once set aside, it stays aside: no third run and no second notice after another restart.
    gateway(home);
    say("still there?");
    await until(() => fakes.telegram.sent.find((m) => m.text === "re: still there?"), "an answer after restart");
    expect(poisonRequests()).toBe(2);
    expect(fakes.telegram.sent.filter((m) => m.text.includes("set your message aside"))).toHaveLength(1);
  });

  it("revoke takes a paired user's access away and pauses their reminder, which then never runs", async () => {
    const home = tempHome();
    model.respond((request) => {
      const last = request.messages.at(-1);
      if (last?.role === "tool") return { content: `Okay. ${String(last.content).split("\n")[1] ?? ""}` };
      if (lastText(request).startsWith("[system: scheduler]")) return { content: "REMINDER: water the plants" };
      // Due after the revoke below, which starts a CLI process, even on a busy machine.
      const at = new Date(Date.now() + 8000).toISOString();
      return { toolCalls: [{ name: "cron", arguments: { action: "add", message: "water the plants", at } }] };
    });
    gateway(home, { TELEGRAM_ALLOW_FROM: "" });
    say("hi, let me in", 77);
    const codeMessage = await until(() => fakes.telegram.sent.find((m) => m.chatId === "77"), "a pairing code");
    const code = /pairing code is ([A-Z0-9]{8})/.exec(codeMessage.text)?.[1] as string;
    expect(model.requests).toHaveLength(0);

    const approve = await pincer(["pairing", "approve", "telegram", code], home);
    expect(approve.stdout).toContain("Approved Ada (id 77) on telegram.");
    say("remind me in 8 seconds to water the plants", 77);
    const dueBy = Date.now() + 8000;
    await until(() => fakes.telegram.sent.find((m) => m.text.startsWith("Okay.")), "the confirmation");

    const revoke = await pincer(["pairing", "revoke", "telegram", "77"], home);
    expect(revoke.code).toBe(0);
    expect(revoke.stdout).toBe("Revoked the approval of 77 on telegram.\nPaused 1 job they created.\n");
    const list = await pincer(["cron", "list"], home);
    expect(list.stdout).toMatch(/owner: telegram 77\n\s+paused since/);

    // Past the reminder's time: it did not run, and the user is a stranger again (a code, no model call).
    await sleep(Math.max(0, dueBy + 1500 - Date.now()));
    const requestsBefore = model.requests.length;
    say("are you there?", 77);
    await until(() => fakes.telegram.sent.filter((m) => m.chatId === "77").length >= 3, "a second pairing code");
    const latest = fakes.telegram.sent.filter((m) => m.chatId === "77").at(-1);
    expect(latest?.text).toMatch(/pairing code is/);
    expect(latest?.text).not.toContain(code);
    expect(model.requests).toHaveLength(requestsBefore);
    expect(model.requests.some((r) => lastText(r).startsWith("[system: scheduler]"))).toBe(false);
    expect(fakes.telegram.sent.some((m) => m.text.includes("REMINDER"))).toBe(false);

    const again = await pincer(["pairing", "revoke", "telegram", "77"], home);
    expect(again.code).toBe(1);
    expect(again.stdout).toContain("77 was not an approved user on telegram.");
  });
});
