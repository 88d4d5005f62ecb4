import { once } from "node:events";
import { createServer, request } from "node:http";
import type { AddressInfo } from "node:net";

/** A request that passed through a router: the bot's token, the method, when it came and when it ended (answered, or
 * its client went away). */
export interface RoutedCall {
  token: string;
  method: string;
  at: number;
  endedAt?: number;
}

/**
 * One API root for several fake bot servers (pincer has one TELEGRAM_API_ROOT for every account): each request is
 * passed, as it is, to the server of the token in its path (`/botTOKEN/…`, `/file/botTOKEN/…`). `calls` records them:
 * with a router per process, which process made which call.
 */
export async function startBotRouter(
  roots: Record<string, string>,
): Promise<{ url: string; calls: RoutedCall[]; close(): Promise<void> }> {
  const calls: RoutedCall[] = [];
  const server = createServer((req, res) => {
    const [, token = "", method = ""] = /^\/(?:file\/)?bot([^/]+)\/([^/?]*)/.exec(req.url ?? "") ?? [];
    const root = roots[token];
    if (!root) return void res.writeHead(404).end();
    const call: RoutedCall = { token, method, at: Date.now() };
    calls.push(call);
    res.on("close", () => {
      call.endedAt = Date.now();
    });
    const target = new URL(req.url ?? "/", root);
    const forward = request(target, { method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    forward.on("error", () => res.destroy());
    req.pipe(forward);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
