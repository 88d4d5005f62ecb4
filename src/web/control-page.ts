import type { Logger } from "pino";
import { listSkills } from "../agent/skills.js";
import type { App } from "../app.js";
import type { Channel } from "../bus/channel.js";
import type { WebAddr } from "../config/config.js";
import { skillDirs } from "../paths.js";
import { createControlServer, type WebChatPort } from "./server.js";
import { loadWebToken } from "./token.js";

/** The page's address as a browser should use it: a wildcard bind is reached through loopback. */
export function pageUrl(addr: WebAddr, token?: string): string {
  const host = addr.host === "0.0.0.0" ? "127.0.0.1" : addr.host === "::" ? "::1" : addr.host;
  const base = `http://${host.includes(":") ? `[${host}]` : host}:${addr.port}/`;
  return token ? `${base}?token=${encodeURIComponent(token)}` : base;
}

export interface ControlPage {
  addr: WebAddr;
  close(): Promise<void>;
}

/**
 * Starts the control page on PINCER_WEB_ADDR next to the channels. Off, or an address that
 * cannot be used, gives undefined (with one line in the log) and never stops the daemon.
 */
export async function startControlPage(deps: {
  app: App;
  channels: () => Channel[];
  web?: WebChatPort;
  log: Logger;
}): Promise<ControlPage | undefined> {
  const { app, log } = deps;
  const wanted = app.config.webAddr;
  if (!wanted) {
    log.info("the control page is off (PINCER_WEB_ADDR=off)");
    return undefined;
  }
  const token = loadWebToken(app.config.home, app.config.webToken);
  const dirs = skillDirs(app.config.workspace);
  const skills = () => listSkills(dirs).map(({ name, description, missing }) => ({ name, description, missing }));
  const server = createControlServer({ ...deps, token, skills });
  const address = await server.listen(wanted.host, wanted.port);
  if (!address) {
    await server.close();
    return undefined;
  }
  const addr = { host: wanted.host, port: address.port };
  log.info({ url: pageUrl(addr) }, "control page is up; `pincer dashboard` prints its address with the token");
  return { addr, close: () => server.close() };
}
