import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempHome } from "./helpers/app.js";
import { pincerAsNewUser as pincer } from "./helpers/daemon.js";
import { fakeModelForFile } from "./helpers/model.js";

const fake = fakeModelForFile();

describe("pincer usage (built)", () => {
  it("prints what the turns cost, as text and as JSON", async () => {
    const home = tempHome();
    const config = join(home, "config.json");
    writeFileSync(config, JSON.stringify({ usage: { prices: { small: { prompt: 1, completion: 10 } } } }));
    const vars = {
      OPENAI_API_KEY: "test",
      OPENAI_BASE_URL: fake.url,
      PINCER_HOME: home,
      PINCER_MODEL: "small",
      PINCER_CONFIG: config,
      LOG_LEVEL: "silent",
    };
    expect((await pincer(["usage", "--json"], vars)).stdout.trim()).toBe("null");
    fake.enqueue(
      { content: "one", usage: { prompt_tokens: 1000, completion_tokens: 100 } },
      { content: "two", usage: { prompt_tokens: 2000, completion_tokens: 200 } },
    );
    for (const text of ["first", "second"]) expect((await pincer(["agent", "-m", text], vars)).code).toBe(0);

    const json = await pincer(["usage", "--json"], vars);
    expect(json.code).toBe(0);
    const report = JSON.parse(json.stdout);
    expect(report.timezone).toBe("UTC");
    expect(report.today.all.total).toEqual({
      calls: 2,
      promptTokens: 3000,
      completionTokens: 300,
      cachedTokens: 0,
      cost: expect.closeTo(0.006, 9),
      unpriced: 0,
      estimated: 0,
    });
    expect(Object.keys(report.thisMonth.all.byKind)).toEqual(["conversation"]);
    expect(Object.keys(report.thisMonth.all.byModel)).toEqual(["small"]);
    expect(report.chats).toEqual([expect.objectContaining({ calls: 2, promptTokens: 3000 })]);

    const text = await pincer(["usage"], vars);
    expect(text.stdout).toContain("Today, all chats: 3,300 tokens, 0.0060\n  conversation 3,300 · small 3,300");
    expect(text.stdout).toMatch(/This month by chat:\n {2}\S+: 3,300 tokens, 0\.0060/);
  });
});
