import { once } from "node:events";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ContextLimits, discoverContext } from "./context-limits.js";

const quiet = { info() {}, warn() {} };
const file = () => join(mkdtempSync(join(tmpdir(), "pincer-limits-")), "context-windows.json");

describe("ContextLimits", () => {
  it("remembers per endpoint across instances; a refusal only lowers, the server's own word replaces", () => {
    const path = file();
    const first = new ContextLimits(path, quiet);
    first.learn("m at a", 8192, "props");
    first.learn("m at a", 16384, "refusal");
    expect(first.get("m at a")).toBe(8192);
    first.learn("m at a", 4096, "refusal");
    first.learn("n at b", 2048, "models");
    const second = new ContextLimits(path, quiet);
    expect(second.get("m at a")).toBe(4096);
    expect(second.get("n at b")).toBe(2048);
    second.learn("m at a", 32768, "props");
    expect(new ContextLimits(path, quiet).get("m at a")).toBe(32768);
    expect(new ContextLimits(path, quiet).get("unknown")).toBeUndefined();
  });

  it("keeps the file small and survives a broken one", () => {
    const path = file();
    const limits = new ContextLimits(path, quiet);
    for (let i = 0; i < 50; i++) limits.learn(`m${i}`, 1000 + i, "props");
    const saved = JSON.parse(readFileSync(path, "utf8"));
    expect(Object.keys(saved)).toHaveLength(32);
    expect(saved.m49.tokens).toBe(1049);
    expect(saved.m0).toBeUndefined();

    writeFileSync(path, '{"m at a": {"tokens": "lots"}, "n": {"tokens": 4096, "source": "props"}, "x": null}');
    const odd = new ContextLimits(path, quiet);
    expect(odd.get("m at a")).toBeUndefined();
    expect(odd.get("n")).toBe(4096);
    writeFileSync(path, "{not json");
    const warned: string[] = [];
    const broken = new ContextLimits(path, { info() {}, warn: (_o: object, m: string) => warned.push(m) } as never);
    expect(broken.get("n")).toBeUndefined();
    expect(warned).toHaveLength(1);
    broken.learn("n", 2048, "refusal");
    expect(new ContextLimits(path, quiet).get("n")).toBe(2048);
  });
});

describe("discoverContext", () => {
  it("gives up on a server that never answers /props, and ignores what is not JSON", async () => {
    const server = createServer((req, res) => {
      if (req.url === "/props") return; // never answered
      res.writeHead(200, { "content-type": "application/json" });
      res.end("<html>not json</html>");
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const { port } = server.address() as AddressInfo;
    try {
      const found = await discoverContext({
        baseUrl: `http://127.0.0.1:${port}/v1/`,
        apiKey: "k",
        model: "m",
        timeoutMs: 300,
      });
      expect(found).toBeUndefined();
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
});
