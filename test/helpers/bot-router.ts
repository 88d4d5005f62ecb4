import { once } from "node:events";
import { createServer, request } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * One API root for several fake bot servers (pincer has one TELEGRAM_API_ROOT for every account): each request is
 * passed, as it is, to the server of the token in its path (`/botTOKEN/…`, `/file/botTOKEN/…`).
 */
export async function startBotRouter(roots: Record<string, string>): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    const token = /^\/(?:file\/)?bot([^/]+)\//.exec(req.url ?? "")?.[1] ?? "";
    const root = roots[token];
    if (!root) return void res.writeHead(404).end();
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
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
