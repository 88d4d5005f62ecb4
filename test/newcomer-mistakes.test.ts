/**
 * The mistakes a newcomer makes, each run through the built binary from an empty folder: every
 * one must end with exactly one sentence on stderr (never a stack trace) and the documented code.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FAKE_DISCORD_TOKEN, type FakeDiscord, startFakeDiscord } from "./fakes/discord-server.js";
import { type FakeOpenAI, startFakeOpenAI } from "./fakes/openai-server.js";
import { type FakeTelegram, startFakeTelegram } from "./fakes/telegram-server.js";
import { tempHome } from "./helpers/app.js";
import { killHard, pincerAsNewUser as pincer, startDaemonAsNewUser, stopDaemon } from "./helpers/daemon.js";
import { until } from "./helpers/until.js";

/** A home whose config.json holds `text`. */
function homeWithConfig(text: string): string {
  const home = tempHome();
  writeFileSync(join(home, "config.json"), text);
  return home;
}

/** A path that goes through a regular file, so nothing can ever be created there (ENOTDIR). */
function throughAFile(): string {
  const dir = tempHome();
  writeFileSync(join(dir, "a-file"), "");
  return join(dir, "a-file", "pincer");
}

const KEY = { OPENAI_API_KEY: "test" };

interface Mistake {
  what: string;
  args: string[];
  vars: () => Record<string, string>;
  stderr: RegExp;
}

const MISTAKES: Mistake[] = [
  {
    what: "no model key",
    args: ["agent", "-m", "hi"],
    vars: () => ({ PINCER_HOME: tempHome() }),
    stderr:
      /^pincer: OPENAI_API_KEY is not set: put your model endpoint's key in \/.*\/\.env \(pincer reads \.env from the folder it is started in\)/,
  },
  {
    what: "a sandbox that does not exist",
    args: ["agent", "-m", "hi"],
    vars: () => ({ ...KEY, PINCER_SANDBOX: "docker" }),
    stderr: /^pincer: PINCER_SANDBOX must be "bwrap" or "none", not "docker"\.$/,
  },
  {
    what: "a made-up time zone",
    args: ["gateway"],
    vars: () => ({ ...KEY, PINCER_TIMEZONE: "Mars/Olympus" }),
    stderr: /^pincer: PINCER_TIMEZONE "Mars\/Olympus" is not an IANA time zone/,
  },
  {
    what: "a log level that does not exist",
    args: ["gateway"],
    vars: () => ({ ...KEY, LOG_LEVEL: "loud" }),
    stderr: /^pincer: LOG_LEVEL must be one of/,
  },
  {
    what: "a base URL that is not a URL",
    args: ["agent", "-m", "hi"],
    vars: () => ({ ...KEY, OPENAI_BASE_URL: "localhost:11434" }),
    stderr: /^pincer: OPENAI_BASE_URL must be an http\(s\) URL/,
  },
  {
    what: "a Telegram token pasted wrong",
    args: ["gateway"],
    vars: () => ({ ...KEY, TELEGRAM_BOT_TOKEN: "abc" }),
    stderr: /^pincer: TELEGRAM_BOT_TOKEN does not look like a bot token: paste the token BotFather gave you/,
  },
  {
    what: "a Discord token pasted wrong",
    args: ["gateway"],
    vars: () => ({ ...KEY, DISCORD_BOT_TOKEN: "my-bot" }),
    stderr: /^pincer: DISCORD_BOT_TOKEN does not look like a bot token/,
  },
  {
    what: "a @username in the Telegram allowlist",
    args: ["gateway"],
    vars: () => ({ ...KEY, TELEGRAM_ALLOW_FROM: "@ada" }),
    stderr: /^pincer: TELEGRAM_ALLOW_FROM entry "@ada" is not a numeric user id/,
  },
  {
    what: "a name in the Discord allowlist",
    args: ["gateway"],
    vars: () => ({ ...KEY, DISCORD_ALLOW_FROM: "123, ada#1234" }),
    stderr: /^pincer: DISCORD_ALLOW_FROM entry "ada#1234" is not a numeric user id/,
  },
  {
    what: "a webhook port out of range",
    args: ["gateway"],
    vars: () => ({ ...KEY, TELEGRAM_WEBHOOK_PORT: "99999" }),
    stderr: /^pincer: TELEGRAM_WEBHOOK_PORT must be a port number/,
  },
  {
    what: "a config file that is not JSON",
    args: ["gateway"],
    vars: () => ({ ...KEY, PINCER_HOME: homeWithConfig("{ agent: 1 ") }),
    stderr: /^pincer: PINCER_CONFIG file .*config\.json is not valid JSON/,
  },
  {
    what: "a typo in a config key",
    args: ["gateway"],
    vars: () => ({ ...KEY, PINCER_HOME: homeWithConfig('{"agnet": {}}') }),
    stderr: /^pincer: PINCER_CONFIG file .*: the top level must NOT have additional properties "agnet"\.$/,
  },
  {
    what: "a config value of the wrong type",
    args: ["gateway"],
    vars: () => ({ ...KEY, PINCER_HOME: homeWithConfig('{"agent": {"maxIterations": "many"}}') }),
    stderr: /^pincer: PINCER_CONFIG file .*: agent\.maxIterations must be integer\.$/,
  },
  {
    what: "PINCER_CONFIG naming a missing file",
    args: ["gateway"],
    vars: () => ({ ...KEY, PINCER_CONFIG: "/nonexistent/pincer.json" }),
    stderr: /^pincer: PINCER_CONFIG points to \/nonexistent\/pincer\.json, which does not exist\.$/,
  },
  {
    what: "a bad exec pattern, found after start-up",
    args: ["agent", "-m", "hi"],
    vars: () => ({ ...KEY, PINCER_HOME: homeWithConfig('{"exec": {"denyPatterns": ["(unclosed"]}}') }),
    stderr: /^pincer: .*denyPatterns/,
  },
  {
    what: "PINCER_HOME through a file, for onboard",
    args: ["onboard"],
    vars: () => ({ PINCER_HOME: throughAFile() }),
    stderr:
      /^pincer: cannot use .*a-file.* \(a part of the path is a file, not a folder\): PINCER_HOME and PINCER_WORKSPACE must be folders/,
  },
  {
    what: "PINCER_HOME through a file, for agent",
    args: ["agent", "-m", "hi"],
    vars: () => ({ ...KEY, PINCER_HOME: throughAFile() }),
    stderr: /^pincer: cannot use .*a-file/,
  },
  {
    what: "PINCER_WORKSPACE through a file, for the gateway",
    args: ["gateway"],
    vars: () => ({ ...KEY, PINCER_HOME: tempHome(), PINCER_WORKSPACE: throughAFile() }),
    stderr: /^pincer: cannot use .*a-file/,
  },
];

describe("newcomer mistakes, through the built binary", () => {
  it.each(MISTAKES)("$what: one sentence, exit code 1", async ({ args, vars, stderr }) => {
    const result = await pincer(args, vars());
    const output = `${result.stdout}${result.stderr}`;
    expect(output).not.toMatch(/\n\s+at /);
    expect(result.code).toBe(1);
    const lines = result.stderr.trim().split("\n").filter(Boolean);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(stderr);
  });
});

describe("pincer doctor asks the platforms", () => {
  let model: FakeOpenAI;
  let telegram: FakeTelegram;
  let discord: FakeDiscord;
  beforeAll(async () => {
    [model, telegram, discord] = await Promise.all([
      startFakeOpenAI(),
      startFakeTelegram(),
      startFakeDiscord({ token: FAKE_DISCORD_TOKEN }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([model.close(), telegram.close(), discord.close()]);
  });

  const base = () => ({
    OPENAI_API_KEY: "test",
    OPENAI_BASE_URL: model.url,
    PINCER_HOME: tempHome(),
    PINCER_SANDBOX: "none",
    TELEGRAM_BOT_TOKEN: telegram.token,
    TELEGRAM_API_ROOT: telegram.apiRoot,
    DISCORD_BOT_TOKEN: FAKE_DISCORD_TOKEN,
    DISCORD_API_URL: discord.apiUrl,
  });

  it("passes with exit 0 when every check passes, naming the bots", async () => {
    const home = tempHome();
    mkdirSync(join(home, "workspace"));
    const result = await pincer(["doctor"], { ...base(), PINCER_HOME: home });
    expect(result.stdout).toMatch(/\[ok {2}\] model: gpt-4\.1-mini at .* answers/);
    expect(result.stdout).toMatch(/\[ok {2}\] telegram: connected as @/);
    expect(result.stdout).toMatch(/\[ok {2}\] discord: connected as /);
    expect(result.stdout).not.toContain("FAIL");
    expect(result.code).toBe(0);
  });

  it("fails with exit 1 on refused tokens, a base URL without /v1 and an impossible home", async () => {
    const result = await pincer(["doctor"], {
      ...base(),
      OPENAI_BASE_URL: model.url.replace(/\/v1$/, ""),
      TELEGRAM_BOT_TOKEN: "999:AAH-a-token-telegram-does-not-know-000",
      DISCORD_BOT_TOKEN: "MTAwMDAwMDAwMDAwMDAwMDAw.Wrong0.not-the-token-discord-knows",
      PINCER_HOME: throughAFile(),
    });
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/\[FAIL\] model: the model endpoint answered 404 .* most endpoints want .*\/v1/);
    expect(result.stdout).toMatch(/\[FAIL\] telegram: Telegram refused TELEGRAM_BOT_TOKEN \(401/);
    expect(result.stdout).toMatch(/\[FAIL\] discord: Discord refused DISCORD_BOT_TOKEN \(401/);
    expect(result.stdout).toMatch(/\[FAIL\] PINCER_HOME: .*a-file is a file/);
  });

  it("warns when the endpoint does not list the model", async () => {
    const result = await pincer(["doctor"], { ...base(), PINCER_MODEL: "gpt-9-imaginary" });
    expect(result.stdout).toMatch(
      /\[warn\] model: .* does not list PINCER_MODEL "gpt-9-imaginary"; it lists gpt-4\.1-mini/,
    );
  });

  it("runs the gateway with a refused Telegram token: one error line naming it, the daemon stays up", async () => {
    const daemon = startDaemonAsNewUser({
      ...base(),
      DISCORD_BOT_TOKEN: "",
      TELEGRAM_BOT_TOKEN: "999:AAH-a-token-telegram-does-not-know-000",
    });
    const log = () => daemon.output.join("");
    try {
      await until(() => log().includes("pincer is running"), "the gateway to start", 20_000, log);
      expect(await stopDaemon(daemon)).toBe(0);
    } finally {
      await killHard(daemon); // only if a check above failed while it ran
    }
    const off = log()
      .split("\n")
      .filter((line) => line.includes("telegram is off"));
    expect(off).toHaveLength(1);
    expect(off[0]).toContain("Telegram rejected TELEGRAM_BOT_TOKEN (401 Unauthorized)");
    expect(log()).not.toMatch(/\n\s+at /);
  });
});
