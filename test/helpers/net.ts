import { once } from "node:events";
import { createServer } from "node:net";

/** A port on 127.0.0.1 that was free a moment ago (the kernel's pick, then let go). */
export async function freePort(): Promise<number> {
  const server = createServer().listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}
