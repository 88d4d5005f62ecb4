import { once } from "node:events";
import { createServer, type Server } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { tempHome } from "./helpers/app.js";
import { type Daemon, killHard, pincer, startDaemon } from "./helpers/daemon.js";
import { fakeModelForFile } from "./helpers/model.js";
import { freePort } from "./helpers/net.js";
import { until } from "./helpers/until.js";
import { login } from "./helpers/web.js";

/** The built daemon with its control page: `pincer gateway`, `pincer dashboard`, the log it writes. */

const API_KEY = "sk-test-secret-key-never-logged";
const model = fakeModelForFile();
const daemons: Daemon[] = [];
const servers: Server[] = [];

afterEach(async () => {
  for (const daemon of daemons.splice(0)) await killHard(daemon);
  for (const server of servers.splice(0)) server.close();
});

function env(addr: string): Record<string, string> {
  return {
    OPENAI_API_KEY: API_KEY,
    OPENAI_BASE_URL: model.url,
    PINCER_SANDBOX: "none",
    PINCER_TIMEZONE: "UTC",
    PINCER_WEB_ADDR: addr,
    LOG_LEVEL: "info",
  };
}

/** The gateway and its log (it logs to stderr only, so its output is the log). */
function gateway(home: string, addr: string): { log: () => string } {
  const daemon = startDaemon(home, env(addr));
  daemons.push(daemon);
  return { log: () => daemon.output.join("") };
}

/** A port that something else holds. */
async function busyPort(): Promise<number> {
  const server = createServer().listen(0, "127.0.0.1");
  servers.push(server);
  await once(server, "listening");
  return (server.address() as { port: number }).port;
}

describe("pincer gateway with the control page", () => {
  it("starts the channels with one warning when the address is in use", async () => {
    const home = tempHome("pincer-web-gw-");
    const port = await busyPort();
    const { log } = gateway(home, `127.0.0.1:${port}`);
    await until(() => log().includes("pincer is running"), "the gateway");
    const warnings = log()
      .split("\n")
      .filter((line) => line.includes("control page not started"));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain("the address is in use");
    expect(JSON.parse(warnings[0]).level).toBe(40);
  });

  it("refuses a non-loopback address without PINCER_WEB_TOKEN in one sentence", async () => {
    const home = tempHome("pincer-web-gw-");
    const result = await pincer(["gateway"], home, env("0.0.0.0:7390"));
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(result.stderr).toMatch(
      /^pincer: PINCER_WEB_ADDR 0\.0\.0\.0:7390 is reachable from other machines: set PINCER_WEB_TOKEN/,
    );
  });

  it("`pincer dashboard` prints the address with the token; a web chat turn logs one line without secrets", async () => {
    const home = tempHome("pincer-web-gw-");
    const port = await freePort();
    const { log } = gateway(home, `127.0.0.1:${port}`);
    await until(() => log().includes("pincer is running"), "the gateway");
    const { code, stdout } = await pincer(["dashboard"], home, env(`127.0.0.1:${port}`));
    expect(code).toBe(0);
    const url = stdout.split("\n")[0];
    expect(url).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:${port}/\\?token=[A-Za-z0-9_-]{32}$`));
    expect(stdout).toContain("Open it in a browser");
    const token = new URL(url).searchParams.get("token") ?? "";
    const shell = await fetch(url);
    expect(shell.status).toBe(200);
    expect(await shell.text()).not.toContain('<h2 id="h-status">Status</h2>');
    const session = await login(`http://127.0.0.1:${port}`, token);
    const page = await fetch(`http://127.0.0.1:${port}/api/page`, { headers: session });
    expect(((await page.json()) as { main: string }).main).toContain('<h2 id="h-status">Status</h2>');

    model.enqueue({ content: "A private answer." });
    const sent = await fetch(`http://127.0.0.1:${port}/api/chat`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ chatId: "main", text: "my secret question" }),
    });
    expect(sent.status).toBe(202);
    await until(() => log().includes('"turn finished"'), "the turn's log line");
    const turn = JSON.parse(
      log()
        .split("\n")
        .find((line) => line.includes('"turn finished"')) ?? "{}",
    );
    expect(turn).toMatchObject({
      session: "web:main",
      modelCalls: 1,
      toolCalls: 0,
      outcome: "ok",
      promptTokens: 1,
      completionTokens: 1,
    });
    expect(turn.durationMs).toBeGreaterThanOrEqual(turn.modelMs);
    // Where the turn's time went: in the inbox, building the prompt, storing the turn.
    expect(turn.waitedMs).toBeGreaterThanOrEqual(0);
    expect(turn.contextMs).toBeGreaterThan(0);
    expect(turn.storeMs).toBeGreaterThan(0);
    expect(turn.contextMs + turn.modelMs + turn.storeMs).toBeLessThanOrEqual(turn.durationMs + 2);
    // The token, the key and what was said never reach the log.
    for (const secret of [token, API_KEY, "my secret question", "A private answer."])
      expect(log()).not.toContain(secret);

    const health = await fetch(`http://127.0.0.1:${port}/healthz`);
    expect(health.status).toBe(200);
  });

  it("`pincer dashboard` says when the page is off", async () => {
    const home = tempHome("pincer-web-gw-");
    const result = await pincer(["dashboard"], home, env("off"));
    expect(result.code).toBe(1);
    expect(result.stdout).toContain("The control page is off (PINCER_WEB_ADDR=off)");
  });
});
