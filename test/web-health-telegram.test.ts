import { afterEach, describe, expect, it } from "vitest";
import { startTelegramHarness, type TelegramHarness } from "./helpers/telegram.js";
import { until } from "./helpers/until.js";
import { startWebHarness, type WebHarness } from "./helpers/web.js";

/** `/healthz` follows the real Telegram channel: 503 while the Bot API fails, 200 once it answers. */

let tg: TelegramHarness | undefined;
let h: WebHarness | undefined;
afterEach(async () => {
  await h?.close();
  await tg?.close();
});

describe("/healthz with Telegram", () => {
  it("is 503 naming telegram while the Bot API answers 502, and 200 when it is back", async () => {
    tg = await startTelegramHarness({
      env: { PINCER_WEB_ADDR: "127.0.0.1:0" },
      timing: { startWaitMs: 50, reconnectBaseMs: 200, reconnectMaxMs: 200 },
      beforeStart: (telegram) => telegram.failNext("getMe", { status: 502, description: "Bad Gateway" }, 15),
    });
    const web = await startWebHarness(tg.app, [tg.channel]);
    h = web;
    const health = async () => {
      const res = await fetch(`${web.base}/healthz`);
      return {
        status: res.status,
        body: (await res.json()) as { channels: Record<string, { state: string; detail?: string }> },
      };
    };
    const down = await health();
    expect(down.status).toBe(503);
    expect(down.body.channels.telegram.state).not.toBe("connected");
    await until(async () => (await health()).body.channels.telegram.state === "down", "telegram to be reported down");
    expect((await health()).body.channels.telegram.detail).toMatch(/502/);
    await until(async () => (await health()).status === 200, "telegram to recover");
    expect((await health()).body.channels).toEqual({ telegram: { state: "connected" }, web: { state: "connected" } });
  });
});
