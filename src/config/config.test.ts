import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError, isValidTimeZone, loadConfig } from "./config.js";

const home = mkdtempSync(join(tmpdir(), "pincer-config-"));
const base = { OPENAI_API_KEY: "k", PINCER_HOME: home, PINCER_TIMEZONE: "Europe/Berlin" };

function errorOf(env: Record<string, string>): string {
  try {
    loadConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error("expected a ConfigError");
}

describe("loadConfig", () => {
  it("fills every default", () => {
    const config = loadConfig(base);
    expect(config.openai.baseUrl).toBe("https://api.openai.com/v1");
    expect(config.workspace).toBe(join(home, "workspace"));
    expect(config.sandbox).toBe("bwrap");
    expect(config.agent.maxIterations).toBe(40);
    expect(config.agent.maxConcurrentTurns).toBe(8);
    expect(config.exec.timeoutSeconds).toBe(60);
    expect(config.telegramAllowFrom).toEqual([]);
  });

  it("reads lists, URLs and the config file", () => {
    const file = join(home, "custom.json");
    writeFileSync(file, JSON.stringify({ agent: { maxIterations: 5 }, exec: { network: true } }));
    const config = loadConfig({
      ...base,
      PINCER_CONFIG: file,
      TELEGRAM_ALLOW_FROM: " 1, 2 ,,3",
      OPENAI_BASE_URL: "http://127.0.0.1:11434/v1/",
    });
    expect(config.telegramAllowFrom).toEqual(["1", "2", "3"]);
    expect(config.openai.baseUrl).toBe("http://127.0.0.1:11434/v1");
    expect(config.agent.maxIterations).toBe(5);
    expect(config.agent.maxConcurrentTurns).toBe(8);
    expect(config.exec.network).toBe(true);
    expect(config.databaseUrl).toBeUndefined();
    expect(config.cluster.leaseSeconds).toBe(10);
    expect(loadConfig({ ...base, PINCER_DATABASE_URL: "postgres://p:s@db:5432/pincer" }).databaseUrl).toBe(
      "postgres://p:s@db:5432/pincer",
    );
  });

  it.each([
    [{ OPENAI_API_KEY: "" }, /^OPENAI_API_KEY is not set/],
    [{ OPENAI_BASE_URL: "not a url" }, /^OPENAI_BASE_URL must be an http\(s\) URL/],
    [{ TELEGRAM_API_ROOT: "ftp://x" }, /^TELEGRAM_API_ROOT must be an http\(s\) URL/],
    [{ PINCER_SANDBOX: "docker" }, /^PINCER_SANDBOX must be "bwrap" or "none"/],
    [{ PINCER_TIMEZONE: "Mars/Olympus" }, /^PINCER_TIMEZONE "Mars\/Olympus" is not an IANA time zone/],
    [{ LOG_LEVEL: "loud" }, /^LOG_LEVEL must be one of/],
    [{ PINCER_CONFIG: "/nonexistent/pincer.json" }, /^PINCER_CONFIG points to \/nonexistent\/pincer.json/],
    [{ PINCER_DATABASE_URL: "mysql://db/pincer" }, /^PINCER_DATABASE_URL must start with postgres:\/\//],
    [{ PINCER_DATABASE_URL: "db.internal:5432" }, /^PINCER_DATABASE_URL must start with postgres:\/\//],
  ])("rejects %j with one sentence naming the variable", (env, message) => {
    const text = errorOf({ ...base, ...env });
    expect(text).toMatch(message);
    expect(text.split("\n")).toHaveLength(1);
  });

  it("names the bad setting inside the config file", () => {
    const file = join(home, "bad.json");
    writeFileSync(file, JSON.stringify({ agent: { maxIterations: "many" } }));
    expect(errorOf({ ...base, PINCER_CONFIG: file })).toMatch(
      /^PINCER_CONFIG file .*bad.json: agent.maxIterations must be integer/,
    );
    writeFileSync(file, JSON.stringify({ agnet: {} }));
    expect(errorOf({ ...base, PINCER_CONFIG: file })).toMatch(/must NOT have additional properties "agnet"/);
    writeFileSync(file, JSON.stringify({ cron: { tools: ["read_file", "spawn"] } }));
    expect(errorOf({ ...base, PINCER_CONFIG: file })).toMatch(/cron.tools may not list "spawn"/);
    writeFileSync(file, JSON.stringify({ people: { defaultRole: "visitor" } }));
    expect(errorOf({ ...base, PINCER_CONFIG: file })).toMatch(/people.defaultRole "visitor" is not a role/);
    writeFileSync(file, JSON.stringify({ people: { defaultRole: "visitor" }, roles: { visitor: { tools: [] } } }));
    expect(loadConfig({ ...base, PINCER_CONFIG: file }).roles.visitor.tools).toEqual([]);
    writeFileSync(file, JSON.stringify({ roles: { guest: { tools: "exec" } } }));
    expect(errorOf({ ...base, PINCER_CONFIG: file })).toMatch(/roles.guest.tools must be array/);
    writeFileSync(file, "{ nope");
    expect(errorOf({ ...base, PINCER_CONFIG: file })).toMatch(/is not valid JSON/);
  });

  it("refuses an agent.models entry /model could not tell apart, in one sentence naming it", () => {
    const file = join(home, "models.json");
    const refused = (models: unknown) => {
      writeFileSync(file, JSON.stringify({ agent: { models } }));
      return errorOf({ ...base, PINCER_CONFIG: file });
    };
    expect(refused([{ label: "x" }])).toMatch(/agent.models.0 must have required property 'name'/);
    expect(refused([{ name: "a", baseUrl: "ftp://x" }])).toMatch(/agent.models.0.baseUrl must match/);
    expect(refused([{ name: "a", key: "x" }])).toMatch(/agent.models.0 must NOT have additional properties "key"/);
    expect(refused([{ name: "llama 3" }])).toMatch(/agent.models name "llama 3" has a space\.$/);
    expect(refused([{ name: "a", label: "Fast" }, { name: "FAST" }])).toMatch(
      /agent.models "fast" names two models \(in any case\); rename one\.$/,
    );
    expect(refused([{ name: "a", label: "Default" }])).toMatch(/"default" is what \/model default means/);
    writeFileSync(file, JSON.stringify({ agent: { models: [{ name: "a", label: "A" }, { name: "b" }] } }));
    expect(loadConfig({ ...base, PINCER_CONFIG: file }).agent.models).toEqual([
      { name: "a", label: "A" },
      { name: "b" },
    ]);
  });

  it("lets commands that never call the model run without a key", () => {
    expect(loadConfig({ ...base, OPENAI_API_KEY: "" }, { requireApiKey: false }).openai.apiKey).toBe("");
  });
});

describe("isValidTimeZone", () => {
  it("accepts canonical names, UTC and aliases, and refuses the rest", () => {
    for (const zone of [
      "UTC",
      "Etc/UTC",
      "Europe/Berlin",
      "America/Argentina/Buenos_Aires",
      "Asia/Calcutta",
      "US/Eastern",
    ])
      expect(isValidTimeZone(zone), zone).toBe(true);
    for (const zone of ["Mars/Olympus", "", "Europe/Berlin ", "../etc/passwd"])
      expect(isValidTimeZone(zone), zone).toBe(false);
  });

  it("stops when a cost budget is set and a configured model has no price", () => {
    const file = join(home, "budget.json");
    const prices = { "gpt-4.1-mini": { prompt: 0.4, completion: 1.6 } };
    writeFileSync(file, JSON.stringify({ usage: { chatMonthlyCost: 5, prices }, agent: { helperModel: "cheap" } }));
    expect(errorOf({ ...base, PINCER_CONFIG: file })).toBe(
      `PINCER_CONFIG file ${file}: usage.chatMonthlyCost is set, so usage.prices needs a price for "cheap" (its cost would be unknown).`,
    );
    writeFileSync(file, JSON.stringify({ usage: { monthlyCost: 5, dailyTokens: 9, prices } }));
    expect(loadConfig({ ...base, PINCER_CONFIG: file }).usage).toEqual({ monthlyCost: 5, dailyTokens: 9, prices });
    // Token budgets need no prices.
    writeFileSync(file, JSON.stringify({ usage: { dailyTokens: 9 } }));
    expect(loadConfig({ ...base, PINCER_CONFIG: file }).usage).toEqual({ dailyTokens: 9, prices: {} });
  });

  it("refuses a voice setting that cannot work, in one sentence naming it", () => {
    const file = join(home, "voice.json");
    const refused = (voice: unknown) => {
      writeFileSync(file, JSON.stringify({ voice }));
      return errorOf({ ...base, PINCER_CONFIG: file });
    };
    expect(refused({ replies: "loud" })).toMatch(/voice.replies must be equal to one of the allowed values/);
    expect(refused({ tts: { model: "tts-1" } })).toMatch(/voice.tts needs "model" and "voice" .* or a "command"\.$/);
    expect(refused({ tts: { command: ["espeak-ng"], model: "x" } })).toMatch(
      /either a command or a model, not both\.$/,
    );
    expect(refused({ tts: { command: ["espeak-ng", "--stdin"] } })).toMatch(
      /voice.tts.command must name .* "\{out\}"\.$/,
    );
    expect(refused({ stt: { command: ["whisper-cli"] } })).toMatch(/voice.stt.command must name .* "\{in\}"\.$/);
    expect(refused({ stt: { command: "whisper-cli {in}" } })).toMatch(/voice.stt.command must be array/);
    writeFileSync(file, JSON.stringify({ voice: { replies: "auto", tts: { command: ["espeak-ng", "-w", "{out}"] } } }));
    expect(loadConfig({ ...base, PINCER_CONFIG: file }).voice).toMatchObject({ replies: "auto", maxSpokenChars: 1500 });
  });
});
