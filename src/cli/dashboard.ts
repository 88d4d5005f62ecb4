import type { Config } from "../config/config.js";
import { pageUrl } from "../web/control-page.js";
import { loadWebToken } from "../web/token.js";

/** `pincer dashboard`: the control page's address with its token, and whether a daemon answers there now. */
export async function dashboardText(config: Config): Promise<{ ok: boolean; text: string }> {
  if (!config.webAddr) {
    return { ok: false, text: "The control page is off (PINCER_WEB_ADDR=off); set PINCER_WEB_ADDR to host:port." };
  }
  const url = pageUrl(config.webAddr, loadWebToken(config.home, config.webToken));
  const running = await fetch(new URL("/healthz", url), { signal: AbortSignal.timeout(2000) }).then(
    (res) => res.status === 200 || res.status === 503,
    () => false,
  );
  const note = running
    ? "Open it in a browser (that tab then keeps a session until you log out or pincer restarts)."
    : "pincer does not answer there now: start it with `npm start` (pincer gateway), then open the address.";
  return { ok: true, text: `${url}\n${note}` };
}
