/**
 * The web chat in clustered mode: every process serves its own control page, one holds the web role, any may run the
 * turn; a reply must reach the page on whichever process it is open, once. Built `pincer gateway` processes on one
 * real PostgreSQL, against the fake model.
 */
import { describe, expect, it } from "vitest";
import { clusterOnPostgres } from "./helpers/cluster.js";
import { type Daemon, gatewayOnFakes } from "./helpers/daemon.js";
import { freePort } from "./helpers/net.js";
import { hasPostgres } from "./helpers/postgres.js";
import { login } from "./helpers/web.js";

const havePostgres = hasPostgres();
const TOKEN = "w".repeat(32);
const fakes = gatewayOnFakes();
const { model } = fakes;

/** An open page's event stream: everything it received so far. */
async function openPage(base: string, chat: string) {
  const { "x-pincer-session": session } = await login(base, TOKEN);
  const controller = new AbortController();
  const res = await fetch(`${base}/api/events?chat=${chat}&session=${session}`, { signal: controller.signal });
  expect(res.status).toBe(200);
  let received = "";
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  void (async () => {
    for (;;) {
      const { done, value } = await reader.read().catch(() => ({ done: true, value: undefined }));
      if (done) return;
      received += decoder.decode(value, { stream: true });
    }
  })();
  /** The chat messages it was sent (its other events refresh the page's sections). */
  const said = () =>
    received
      .split("\n\n")
      .filter((event) => event.startsWith("event: chat\n"))
      .map((event) => JSON.parse(event.slice(event.indexOf("data: ") + 6)) as { type: string; text?: string })
      .filter((event) => event.type === "message")
      .map((event) => event.text);
  return { said, close: () => controller.abort() };
}

describe.skipIf(!havePostgres)("the web chat on a cluster", () => {
  const cluster = clusterOnPostgres(fakes, { prefix: "pincer-cluster-web-", leaseSeconds: 3 });

  it("shows a reply on the page of every process, once, whichever process holds the web role or ran the turn", async () => {
    model.respond((request) => ({ content: `answer to ${String(request.messages.at(-1)?.content).split("\n")[0]}` }));
    const ports = [await freePort(), await freePort()];
    const daemons = ports.map((port) =>
      cluster.gateway({ PINCER_WEB_ADDR: `127.0.0.1:${port}`, PINCER_WEB_TOKEN: TOKEN }),
    );
    await cluster.allUp(daemons, ["channel:web"]);
    const holder = await cluster.holderOf("channel:web", daemons);
    const bases = daemons.map((d: Daemon) => `http://127.0.0.1:${ports[daemons.indexOf(d)]}`);
    const other = bases[daemons.indexOf(daemons.find((d) => d !== holder) as Daemon)];
    for (const base of bases) {
      await fakes.until(
        () =>
          fetch(`${base}/healthz`).then(
            () => true,
            () => false,
          ),
        `the control page at ${base}`,
      );
    }
    const pages = await Promise.all(bases.map((base) => openPage(base, "main")));
    try {
      for (const [i, base] of bases.entries()) {
        const text = `question ${i + 1}`;
        const sent = await fetch(`${base}/api/chat`, {
          method: "POST",
          headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
          body: JSON.stringify({ chatId: "main", text }),
        });
        expect(sent.status).toBe(202);
        await fakes.until(
          () => pages.every((p) => p.said().includes(`answer to ${text}`)),
          `the answer to ${text} on both pages (the page on ${base === other ? "the process without the web role" : "the holder"} asked)`,
          30_000,
        );
      }
      // Nothing pending and no turn held: no answer is left to reach a page a second time.
      await cluster.settled();
      for (const page of pages) expect(page.said()).toEqual(["answer to question 1", "answer to question 2"]);
    } finally {
      for (const page of pages) page.close();
    }
  }, 120_000);
});
