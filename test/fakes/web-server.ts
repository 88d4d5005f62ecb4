import { once } from "node:events";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";

export interface SeenRequest {
  method: string;
  url: string;
  headers: IncomingMessage["headers"];
}

export interface FakeWeb {
  /** e.g. http://127.0.0.1:40123 (or http://[::1]:40123). */
  url: string;
  port: number;
  /** Every request that reached the server: a refused target must leave this empty. */
  requests: SeenRequest[];
  /** Connections accepted, including ones that never sent a request. */
  connections: number;
  /** Sockets the server saw closed by the client. */
  closedByClient: number;
  close(): Promise<void>;
}

export type WebHandler = (req: IncomingMessage, res: ServerResponse, server: FakeWeb) => unknown;

/**
 * A web server on 127.0.0.1 (or ::1) that records every request and connection, so a test can
 * prove that a refused target received nothing at all. The handler writes the response.
 */
export async function startFakeWeb(
  handler: WebHandler,
  options: { host?: "127.0.0.1" | "::1"; port?: number } = {},
): Promise<FakeWeb> {
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    fake.requests.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers });
    Promise.resolve(handler(req, res, fake)).catch((err: Error) => {
      if (!res.headersSent) res.writeHead(500);
      res.end(String(err));
    });
  });
  server.on("connection", (socket) => {
    fake.connections++;
    sockets.add(socket);
    socket.on("close", () => {
      sockets.delete(socket);
      fake.closedByClient++;
    });
  });
  const host = options.host ?? "127.0.0.1";
  server.listen(options.port ?? 0, host);
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  const fake: FakeWeb = {
    url: host.includes(":") ? `http://[${host}]:${port}` : `http://${host}:${port}`,
    port,
    requests: [],
    connections: 0,
    closedByClient: 0,
    async close() {
      for (const socket of sockets) socket.destroy();
      server.close();
      await once(server, "close");
    },
  };
  return fake;
}
