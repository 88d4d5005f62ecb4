import type { ServerResponse } from "node:http";

/** Per-client bytes that may wait unsent before the client counts as stuck and is dropped. */
const MAX_BUFFERED = 256 * 1024;

/** Server-sent events to the open pages, each showing one web chat (`chatId`). A client that does not read (a stalled
 * phone, a hostile script) is dropped once its backlog passes MAX_BUFFERED, so it can never make the daemon hold
 * unbounded memory; the page's EventSource reconnects by itself. */
export class SseHub {
  readonly clients = new Set<{ res: ServerResponse; chatId?: string }>();
  private readonly heartbeat: NodeJS.Timeout;

  constructor(private readonly maxClients = 32) {
    this.heartbeat = setInterval(() => this.write(": ping\n\n"), 20_000).unref();
  }

  /** Takes over the response; false when there are too many clients already. */
  add(res: ServerResponse, chatId?: string): boolean {
    if (this.clients.size >= this.maxClients) return false;
    res.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-store",
      "x-accel-buffering": "no",
    });
    res.write("retry: 2000\n\n");
    const client = { res, chatId };
    this.clients.add(client);
    res.on("close", () => this.clients.delete(client));
    return true;
  }

  send(event: string, data: unknown, chatId?: string): void {
    this.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`, chatId);
  }

  close(): void {
    clearInterval(this.heartbeat);
    for (const client of this.clients) client.res.destroy();
    this.clients.clear();
  }

  private write(frame: string, chatId?: string): void {
    for (const client of this.clients) {
      if (chatId !== undefined && client.chatId !== chatId) continue;
      if (client.res.writableLength > MAX_BUFFERED) {
        this.clients.delete(client);
        client.res.destroy();
        continue;
      }
      client.res.write(frame);
    }
  }
}
