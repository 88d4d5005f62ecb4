import { once } from "node:events";
import { createServer } from "node:http";
import { connect } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { SseHub } from "./sse.js";

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const fn of cleanups.splice(0)) fn();
});

async function hubServer() {
  const hub = new SseHub(2);
  const server = createServer((_req, res) => {
    if (!hub.add(res, "main")) res.writeHead(503).end();
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  cleanups.push(() => {
    hub.close();
    server.closeAllConnections();
    server.close();
  });
  return { hub, port: (server.address() as { port: number }).port };
}

describe("SseHub", () => {
  it("drops a client that stops reading instead of buffering for it without end", async () => {
    const { hub, port } = await hubServer();
    const socket = connect(port, "127.0.0.1");
    cleanups.push(() => socket.destroy());
    socket.write("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    await once(socket, "data");
    socket.pause(); // a phone in a tunnel: the connection stays open, nothing is read
    const deadline = Date.now() + 10_000;
    const frame = "x".repeat(64 * 1024);
    let sends = 0;
    while (hub.clients.size > 0) {
      if (Date.now() > deadline) throw new Error("the stuck client was never dropped");
      hub.send("chat", frame, "main");
      sends++;
      await new Promise((r) => setImmediate(r));
    }
    // Dropped after the kernel's buffers and at most 256 KiB of ours filled, not after gigabytes.
    expect(sends).toBeLessThan(2000);
  });

  it("sends chat events only to pages showing that chat, and caps the number of pages", async () => {
    const { hub, port } = await hubServer();
    const read = async () => {
      const res = await fetch(`http://127.0.0.1:${port}/`);
      return res;
    };
    const a = await read();
    const b = await read();
    expect((await read()).status).toBe(503);
    hub.send("chat", { text: "for main" }, "main");
    hub.send("chat", { text: "for other" }, "other");
    hub.send("sections", { status: "<p>" });
    const reader = a.body?.getReader();
    let text = "";
    while (!text.includes("sections")) text += new TextDecoder().decode((await reader?.read())?.value);
    expect(text).toContain("for main");
    expect(text).not.toContain("for other");
    await reader?.cancel();
    await b.body?.cancel();
  });
});
