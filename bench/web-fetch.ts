/**
 * What web_fetch costs: the tool (pinned connection, checks, body cap, HTML converted in a worker)
 * against a bare undici request of the same page, for a JSON document, a typical article page and
 * a 1 MB page, served on 127.0.0.1 (opened through web.allow). Also the event loop's worst delay
 * while the conversions run, which shows the daemon stays responsive.
 *
 *   npx tsc -p tsconfig.build.json && npx tsx bench/web-fetch.ts
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { pino } from "pino";
import { request } from "undici";
import { ToolRegistry } from "../src/tools/registry.js";
import type { ToolContext } from "../src/tools/tool.js";
import { compilePolicy } from "../src/tools/web/address-policy.js";
import { createWebFetchTool } from "../src/tools/web/web-fetch-tool.js";
import { testBus } from "../test/helpers/bus.js";
import { ms, summary } from "./stats.js";

const RUNS = 20;
const WARMUP = 3;

const paragraph = (i: number) =>
  `<p>Paragraph ${i}: ${"some readable words in a sentence. ".repeat(12)}<a href="/p${i}">more</a></p>`;
const pages: Record<string, [string, string]> = {
  "json 100 KB": [
    "application/json",
    JSON.stringify({ items: Array.from({ length: 1500 }, (_, i) => ({ i, name: `item ${i}`, tags: ["a", "b"] })) }),
  ],
  "article 100 KB": [
    "text/html",
    `<html><head><title>Article</title><script>${"var x = 1;".repeat(2000)}</script></head><body><nav>${'<a href="/">menu</a>'.repeat(100)}</nav><article><h1>Title</h1>${Array.from({ length: 120 }, (_, i) => paragraph(i)).join("")}</article><footer>footer</footer></body></html>`,
  ],
  "page 1 MB": [
    "text/html",
    `<html><head><title>Big</title></head><body>${Array.from({ length: 1800 }, (_, i) => `<div class="c">${paragraph(i)}</div>`).join("")}</body></html>`,
  ],
};

const server = createServer((req, res) => {
  const [type, body] = pages[decodeURIComponent(req.url?.slice(1) ?? "")] ?? ["text/plain", "?"];
  res.writeHead(200, { "content-type": type });
  res.end(body);
});
await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

const registry = new ToolRegistry().register(
  createWebFetchTool({
    policy: compilePolicy(["127.0.0.1"]),
    timeoutSeconds: 20,
    maxBytes: 2 * 1024 * 1024,
    maxRedirects: 5,
    maxChars: 20_000,
    userAgent: "bench",
  }),
);
const ctx = {
  signal: new AbortController().signal,
  log: pino({ level: "silent" }),
  bus: testBus(),
} as unknown as ToolContext;

const loop = monitorEventLoopDelay({ resolution: 10 });
loop.enable();
for (const [name, [, body]] of Object.entries(pages)) {
  const url = `${base}/${encodeURIComponent(name)}`;
  const tool: number[] = [];
  const bare: number[] = [];
  for (let i = 0; i < WARMUP + RUNS; i++) {
    let t = performance.now();
    const result = await registry.execute("web_fetch", JSON.stringify({ url }), ctx);
    if (result.startsWith("Error")) throw new Error(result);
    if (i >= WARMUP) tool.push(performance.now() - t);
    t = performance.now();
    await (await request(url)).body.text();
    if (i >= WARMUP) bare.push(performance.now() - t);
  }
  const a = summary(tool);
  const b = summary(bare);
  console.log(
    `${name.padEnd(15)} (${(body.length / 1024).toFixed(0)} KiB)  web_fetch median ${ms(a.median)} p90 ${ms(a.p90)}  |  bare undici median ${ms(b.median)} p90 ${ms(b.p90)}`,
  );
}
loop.disable();
console.log(`event loop delay while converting: max ${ms(loop.max / 1e6)}, p99 ${ms(loop.percentile(99) / 1e6)}`);
server.close();
