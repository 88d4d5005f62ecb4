import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll } from "vitest";
import { findBinary, hasSystemPackage } from "./system-packages.js";
import { type HarnessOptions, startTelegramHarness, type TelegramHarness } from "./telegram.js";
import { startWebHarness, type WebHarness } from "./web.js";

/** Debian's Chromium, or PINCER_CHROMIUM; undefined without one (the file's describe.runIf skips it). */
export const CHROMIUM =
  process.env.PINCER_CHROMIUM ?? (hasSystemPackage("chromium", "chromium") ? findBinary("chromium") : undefined);

export interface ControlPageInChromium {
  /** The app on the fake Bot API and the fake model. */
  readonly tg: TelegramHarness;
  /** Its control page and web chat. */
  readonly h: WebHarness;
  readonly browser: Browser;
  /** A new tab logged in with the page's token (`?token=`), and the script errors it reports. */
  open(): Promise<{ page: Page; errors: string[] }>;
}

/**
 * The app with its control page, and Chromium, for the whole file: call inside `describe.runIf(CHROMIUM !== undefined)`.
 * `args` are Chromium's flags besides --no-sandbox.
 */
export function controlPageInChromium(
  options: Pick<HarnessOptions, "adjust"> & { args?: string[] } = {},
): ControlPageInChromium {
  let tg: TelegramHarness | undefined;
  let h: WebHarness | undefined;
  let browser: Browser | undefined;
  beforeAll(async () => {
    tg = await startTelegramHarness({ env: { PINCER_WEB_ADDR: "127.0.0.1:0" }, adjust: options.adjust });
    h = await startWebHarness(tg.app, [tg.channel]);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", ...(options.args ?? [])] });
  }, 30_000);
  afterAll(async () => {
    await browser?.close();
    await h?.close();
    await tg?.close();
  });
  const started = <T>(part: T | undefined): T => {
    if (part === undefined) throw new Error("the control page and Chromium start in the file's beforeAll");
    return part;
  };
  return {
    get tg() {
      return started(tg);
    },
    get h() {
      return started(h);
    },
    get browser() {
      return started(browser);
    },
    async open() {
      const web = started(h);
      const page = await started(browser).newPage();
      const errors: string[] = [];
      page.on("pageerror", (err) => errors.push(err.message));
      await page.goto(`${web.base}/?token=${encodeURIComponent(web.token)}`);
      return { page, errors };
    },
  };
}
