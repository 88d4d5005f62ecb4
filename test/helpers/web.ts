import { readFileSync } from "node:fs";
import { pino } from "pino";
import { createWebChannel, type WebChannel } from "../../channels/web/web-channel.js";
import type { App } from "../../src/app.js";
import type { Channel } from "../../src/bus/channel.js";
import { type ControlPage, startControlPage } from "../../src/web/control-page.js";
import { webTokenPath } from "../../src/web/token.js";

export interface WebHarness {
  base: string;
  token: string;
  web: WebChannel;
  page: ControlPage;
  /** Every channel the page reports (the web chat and those given). */
  channels: Channel[];
  close(): Promise<void>;
}

/** The control page and the web chat on an app that is already started (PINCER_WEB_ADDR=127.0.0.1:0). */
export async function startWebHarness(app: App, others: Channel[] = []): Promise<WebHarness> {
  const web = createWebChannel({ bus: app.bus });
  const channels: Channel[] = [...others, web];
  const page = await startControlPage({ app, channels: () => channels, web, log: pino({ level: "silent" }) });
  if (!page) throw new Error("the control page did not start");
  await web.start();
  return {
    base: `http://127.0.0.1:${page.addr.port}`,
    token: readFileSync(webTokenPath(app.config.home), "utf8").trim(),
    web,
    page,
    channels,
    async close() {
      await page.close();
      await web.stop();
    },
  };
}

/** Logs in as the page's script does with `?token=…`; returns the header that carries the session. */
export async function login(base: string, token: string): Promise<{ "x-pincer-session": string }> {
  const res = await fetch(`${base}/api/session`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ token }),
  });
  if (res.status !== 200) throw new Error(`login failed: ${res.status}`);
  return { "x-pincer-session": ((await res.json()) as { session: string }).session };
}
