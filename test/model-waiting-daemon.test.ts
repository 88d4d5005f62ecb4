import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { ChatRequest } from "./fakes/openai-server.js";
import { tempHome } from "./helpers/app.js";
import { gatewayOnFakes, killHard } from "./helpers/daemon.js";

/** The built daemon on Telegram as a user meets it when the model server refuses or goes away. */
const fakes = gatewayOnFakes();
const { model, gateway, say, until } = fakes;
const lastUser = (request: ChatRequest) =>
  String(request.messages.filter((m) => m.role === "user").at(-1)?.content)
    .split("\n")
    .at(-1);
const texts = () => fakes.telegram.sent.map((m) => m.text);

function home(config: object = {}): string {
  const dir = tempHome("pincer-waiting-");
  writeFileSync(join(dir, "config.json"), JSON.stringify(config));
  return dir;
}

describe("the model server refuses or goes away", () => {
  it("a grammar 500 is one plain sentence, asked once despite modelRetries, and the next message is answered", async () => {
    model.respond((request) =>
      lastUser(request) === "write notes.txt"
        ? { status: 500, message: 'Unexpected empty grammar stack after accepting piece: {"path": "notes.txt",' }
        : { content: `re: ${lastUser(request)}` },
    );
    gateway(home({ agent: { modelRetries: 2 } }));
    say("write notes.txt");
    say("hello");
    await until(() => fakes.telegram.sent.length >= 2, "two answers");
    expect(texts()).toEqual([
      "Sorry, the model endpoint failed while the model was writing a tool call (500).",
      "re: hello",
    ]);
    expect(model.requests.map(lastUser)).toEqual(["write notes.txt", "hello"]);
  });

  it("kill -9 while a message waits through an outage: after the restart it is answered once, the chat told once", async () => {
    let up = false;
    model.respond((request) => (up ? { content: `re: ${lastUser(request)}` } : { status: 502 }));
    const dir = home({ agent: { circuitBreaker: { failureThreshold: 2, coolDownSeconds: 0.3 } } });
    const first = gateway(dir);
    say("are you there?");
    await until(() => fakes.telegram.sent.length >= 1, "the waiting notice");
    // One more try after the notice, so its delivery is recorded (a kill in between would resend it).
    const asked = model.requests.length;
    await until(() => model.requests.length > asked, "a try after the notice");
    await killHard(first);
    up = true;
    gateway(dir);
    await until(() => fakes.telegram.sent.length >= 2, "the answer after the restart", 20_000);
    say("and now?");
    await until(() => fakes.telegram.sent.length >= 3, "the next answer");
    expect(texts()).toEqual([
      expect.stringMatching(/^The model is not answering right now \(the model endpoint answered 502/),
      "re: are you there?",
      "re: and now?",
    ]);
  });
});
