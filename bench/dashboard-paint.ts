/**
 * First paint of the control page in headless Chromium (Debian's `chromium`), with a database
 * of 50 conversations (20 messages each), 20 reminders and audit rows: the time from navigation
 * to first-contentful-paint, and the server's time to render `/`. Baseline in the same run and
 * browser: a static page of the same size from a bare node:http server.
 *
 *   npx tsx bench/dashboard-paint.ts
 */
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { chromium } from "playwright-core";
import { createWebChannel } from "../channels/web/web-channel.js";
import { createApp } from "../src/app.js";
import { loadConfig } from "../src/config/config.js";
import { startControlPage } from "../src/web/control-page.js";
import { webTokenPath } from "../src/web/token.js";
import { ms, summary } from "./stats.js";

const RUNS = 30;
const home = mkdtempSync(join(tmpdir(), "pincer-bench-web-"));
const config = loadConfig({
  OPENAI_API_KEY: "bench",
  PINCER_HOME: home,
  PINCER_TIMEZONE: "UTC",
  PINCER_SANDBOX: "none",
  PINCER_WEB_ADDR: "127.0.0.1:0",
});
const app = await createApp(config, {
  log: pino({ level: "silent" }),
  model: { complete: async () => ({ content: "", toolCalls: [] }) },
});
for (let c = 0; c < 50; c++) {
  const key = `telegram:${1000 + c}`;
  for (let m = 0; m < 10; m++) {
    await app.store.conversations.append(key, [
      { role: "user", content: `question ${m} in chat ${c}: ${"words ".repeat(20)}` },
      { role: "assistant", content: `answer ${m}: ${"more words ".repeat(30)}` },
    ]);
  }
  await app.store.audit.record({
    sessionKey: key,
    tool: "exec",
    arguments: '{"command":"ls"}',
    result: "a\nb",
    durationMs: 3,
  });
}
for (let j = 0; j < 20; j++) {
  await app.store.jobs.add({
    name: `job ${j}`,
    message: `reminder number ${j}`,
    schedule: { kind: "every", everySeconds: 3600 + j, anchor: Date.now() },
    tz: "UTC",
    origin: { channel: "telegram", chatId: "1000", sessionKey: "telegram:1000", isGroup: false },
    owner: { channel: "telegram", userId: "1000" },
    createdAt: Date.now(),
    nextRunAt: Date.now() + 3600_000,
  });
}
const web = createWebChannel({ bus: app.bus });
const page = await startControlPage({ app, channels: () => [web], web, log: pino({ level: "silent" }) });
if (!page) throw new Error("control page did not start");
await app.start([web]);
const token = readFileSync(webTokenPath(home), "utf8").trim();
const base = `http://127.0.0.1:${page.addr.port}`;

// Server render time, measured from outside over HTTP.
const render: number[] = [];
for (let i = 0; i < RUNS; i++) {
  const t0 = performance.now();
  const res = await fetch(`${base}/`, { headers: { authorization: `Bearer ${token}` } });
  await res.text();
  render.push(performance.now() - t0);
}
const html = await (await fetch(`${base}/`, { headers: { authorization: `Bearer ${token}` } })).text();
const staticServer = createServer((_req, res) =>
  res.writeHead(200, { "content-type": "text/html" }).end(html.replace(/<script[\s\S]*?<\/script>/, "")),
);
staticServer.listen(0, "127.0.0.1");
await once(staticServer, "listening");
const staticBase = `http://127.0.0.1:${(staticServer.address() as { port: number }).port}`;

const browser = await chromium.launch({
  executablePath: process.env.PINCER_CHROMIUM ?? "/usr/bin/chromium",
  args: ["--no-sandbox"],
});
const context = await browser.newContext();
const tab = await context.newPage();
await tab.goto(`${base}/?token=${token}`); // sets the cookie
async function paint(url: string): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    await tab.goto(url, { waitUntil: "load" });
    // A string: the callback runs in the page, whose DOM types this project does not load.
    const fcp = (await tab.evaluate(`new Promise((resolve) => {
      const entry = performance.getEntriesByName("first-contentful-paint")[0];
      if (entry) return resolve(entry.startTime);
      new PerformanceObserver((list) => resolve(list.getEntries()[0].startTime)).observe({ type: "paint", buffered: true });
    })`)) as number;
    samples.push(fcp);
  }
  return samples.slice(5);
}
const dashboard = summary(await paint(`${base}/`));
const baseline = summary(await paint(`${staticBase}/`));
const server = summary(render.slice(5));
console.log(`page size: ${(html.length / 1024).toFixed(1)} KiB, ${RUNS - 5} runs each`);
console.log(`server render of / (HTTP round trip): median ${ms(server.median)}, p90 ${ms(server.p90)}`);
console.log(`first contentful paint, control page:  median ${ms(dashboard.median)}, p90 ${ms(dashboard.p90)}`);
console.log(`first contentful paint, static copy:   median ${ms(baseline.median)}, p90 ${ms(baseline.p90)}`);
await browser.close();
staticServer.close();
await page.close();
await app.stop();
rmSync(home, { recursive: true, force: true });
