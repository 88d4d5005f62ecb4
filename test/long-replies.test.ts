import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempHome } from "./helpers/app.js";
import { gatewayOnFakes } from "./helpers/daemon.js";

/**
 * Replies no chat should get as they are, through the built daemon: one of megabytes goes out as
 * a file, one the formatter cannot handle goes out as plain text, and neither holds up the
 * chat's next answer (issue 29, finding 4).
 */

const fakes = gatewayOnFakes();
const { model, gateway, say, until } = fakes;

const lastUser = (request: { messages: Array<{ role: string; content?: unknown }> }) =>
  String(request.messages.filter((m) => m.role === "user").at(-1)?.content)
    .split("\n")
    .at(-1);

describe("replies too big or too odd to format", () => {
  it("sends an 8.4M-character reply as a Markdown file, then answers the next message", async () => {
    const huge = "word ".repeat(1_680_000);
    model.respond((request) => ({ content: lastUser(request) === "huge please" ? huge : `re: ${lastUser(request)}` }));
    const home = tempHome("pincer-long-");
    // Plain replies: streamed in the fake's 5-character pieces, 8.4M characters are 1.7 million events.
    writeFileSync(join(home, "config.json"), JSON.stringify({ agent: { streamReplies: "off" } }));
    gateway(home);
    say("huge please");
    await until(() => fakes.telegram.sent.length >= 1, "the huge reply", 60_000);
    say("and now?");
    await until(() => fakes.telegram.sent.length >= 2, "the next answer", 60_000);
    const [file, next] = fakes.telegram.sent;
    expect(file).toMatchObject({ method: "sendDocument", file: { field: "document", name: "reply.md" } });
    expect(file.file?.size).toBe(huge.trim().length);
    expect(file.text).toContain("8,399,999 characters");
    expect(next).toMatchObject({ method: "sendMessage", text: "re: and now?" });
  }, 120_000);

  it("sends a reply the Markdown formatter overflows on (3,000 nested quotes) as plain text, once", async () => {
    const deep = `${">".repeat(3000)} deep`;
    model.respond((request) => ({ content: lastUser(request) === "deep please" ? deep : `re: ${lastUser(request)}` }));
    const daemon = gateway(tempHome("pincer-long-"));
    say("deep please");
    await until(() => fakes.telegram.sent.length >= 1, "the deep reply", 30_000);
    say("and now?");
    await until(() => fakes.telegram.sent.length >= 2, "the next answer", 30_000);
    expect(fakes.telegram.sent.map((m) => [m.text, m.parseMode])).toEqual([
      [deep, "HTML"],
      ["re: and now?", "HTML"],
    ]);
    expect(daemon.output.join("")).toContain("could not format a reply; sending it as plain text");
  }, 60_000);

  it("drops a reply.md Telegram refuses as too large (413) at once, and the chat's next answer goes out", async () => {
    const long = "x".repeat(32_001);
    model.respond((request) => ({ content: lastUser(request) === "long please" ? long : `re: ${lastUser(request)}` }));
    fakes.telegram.failNext("sendDocument", { status: 413 }, 5);
    const daemon = gateway(tempHome("pincer-long-"));
    say("long please");
    await until(() => fakes.telegram.callsTo("sendDocument").length >= 1, "the document's upload", 30_000);
    say("and now?");
    await until(() => fakes.telegram.sent.find((m) => m.text === "re: and now?"), "the next answer", 30_000);
    // Refused for good: never uploaded again (a retry would wait behind the chat's next replies for a day).
    expect(fakes.telegram.callsTo("sendDocument")).toHaveLength(1);
    expect(fakes.telegram.sent.map((m) => m.text)).toEqual(["re: and now?"]);
    expect(daemon.output.join("")).toContain("Request Entity Too Large");
  }, 60_000);
});
