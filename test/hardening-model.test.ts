import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { ChatRequest } from "./fakes/openai-server.js";
import { tempHome } from "./helpers/app.js";
import { gatewayOnFakes, USER } from "./helpers/daemon.js";

/** The third hardening pass's findings about the model client, against the built daemon on the fakes. */
const OTHER = 43;
const fakes = gatewayOnFakes({ TELEGRAM_ALLOW_FROM: `${USER},${OTHER}` });
const { model, gateway, say, until } = fakes;
const lastUser = (request: ChatRequest) =>
  String(request.messages.filter((m) => m.role === "user").at(-1)?.content)
    .split("\n")
    .at(-1);
const sentTo = (chat: number) => fakes.telegram.sent.filter((m) => m.chatId === String(chat)).map((m) => m.text);

function home(config: object = {}): string {
  const dir = tempHome("pincer-hardening-");
  writeFileSync(join(dir, "config.json"), JSON.stringify(config));
  return dir;
}

describe("one conversation's refused request", () => {
  it("a message the endpoint answers with a plain 500 every time does not open the breaker for other chats", async () => {
    model.respond((request) =>
      lastUser(request) === "poison" ? { status: 500 } : { content: `re: ${lastUser(request)}` },
    );
    // Retries inside a call off: each try of the message is one failure the breaker hears of.
    const daemon = gateway(home({ agent: { modelRetries: 0 } }));
    say("poison");
    // The default threshold is 3: the third try's failure has been weighed once its wait is logged.
    await until(() => daemon.output.join("").includes('"tries":3,'), "three tries of the refused message", 30_000);
    say("hello", OTHER);
    await until(() => sentTo(OTHER).length >= 1, "the other chat's answer", 5_000);
    expect(sentTo(OTHER)).toEqual(["re: hello"]);
  });
});
