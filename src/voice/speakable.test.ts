import { describe, expect, it } from "vitest";
import { SAID, speakableText } from "./speakable.js";

describe("speakableText", () => {
  it("reads words and names code blocks, tables, bare links and images instead of reading them", () => {
    const reply = [
      "Hi **there**, see [the docs](https://example.org/x) or https://example.org/raw.",
      "",
      "| a | b |",
      "|---|---|",
      "| 1 | 2 |",
      "",
      "```sh",
      "rm -rf /tmp/x",
      "```",
      "- run `ls`",
      "- ![chart](https://example.org/c.png)",
    ].join("\n");
    expect(speakableText(reply, 1000)).toBe(
      [`Hi there, see the docs or ${SAID.link}.`, SAID.table, SAID.code, "run ls", SAID.image].join("\n"),
    );
  });

  it("cuts a long answer at a sentence near the limit and says the rest is in the text", () => {
    const sentence = "This is one sentence of the answer. ";
    const spoken = speakableText(sentence.repeat(100), 200);
    expect(spoken.endsWith(`answer.\n${SAID.rest}`)).toBe(true);
    expect(spoken.length).toBeLessThanOrEqual(200 + SAID.rest.length + 1);
  });

  it("bounds the work on a huge reply: only a few times the limit is read", () => {
    const huge = `${"word ".repeat(20_000)}\`\`\`\n${"x".repeat(100_000)}`;
    const started = performance.now();
    const spoken = speakableText(huge, 500);
    expect(performance.now() - started).toBeLessThan(500);
    expect(spoken.length).toBeLessThanOrEqual(500 + SAID.rest.length + 1);
    expect(spoken.endsWith(SAID.rest)).toBe(true);
  });

  it("keeps no control or format characters but line breaks; shell metacharacters stay plain words", () => {
    const hostile = "a\u0000b\u0007c\u001b[31m \u202Eevil\u202C $(touch /tmp/x) `id`; rm -rf ~ | cat > /etc/passwd";
    const spoken = speakableText(hostile, 1000);
    expect(spoken).not.toMatch(/[\p{Cc}\p{Cf}]/u);
    expect(spoken).toContain("$(touch /tmp/x)");
    expect(spoken).toContain("; rm -rf ~ | cat > /etc/passwd");
  });

  it("is empty when the reply is only something that cannot be said", () => {
    expect(speakableText("   ", 100)).toBe("");
  });
});
