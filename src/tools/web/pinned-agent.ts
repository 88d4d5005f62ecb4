import { promises as dns, type LookupAddress } from "node:dns";
import { isIP } from "node:net";
import { Agent, buildConnector } from "undici";
import { type AddressPolicy, checkAddress, isAllowedHost } from "./address-policy.js";

/** Resolves a host name to all its addresses (dns.lookup by default, so /etc/hosts counts too). */
export type Resolver = (hostname: string) => Promise<LookupAddress[]>;

export const systemResolver: Resolver = (hostname) => dns.lookup(hostname, { all: true, verbatim: true });

/** Thrown (as the connection error) when a host resolves to, or is, an address the policy refuses. */
export class BlockedAddressError extends Error {
  override readonly name = "BlockedAddressError";
}

type LookupCallback = (err: Error | null, address: string | LookupAddress[], family?: number) => void;

/**
 * An undici Agent whose every connection goes only to checked addresses. A host name is
 * resolved once per connection, inside the connector; every address is checked and the socket
 * is handed exactly those addresses, so a DNS answer cannot change between check and connect
 * (rebinding). IP literals, which net.connect never looks up, are checked by the connector itself.
 * One refused address refuses the host: a name that mixes public and private addresses is a trick.
 */
export function createPinnedAgent(
  policy: AddressPolicy,
  timeoutMs: number,
  resolve: Resolver = systemResolver,
  ca?: string | Buffer,
): Agent {
  const lookup = (hostname: string, lookupOptions: { all?: boolean; family?: number }, callback: LookupCallback) => {
    resolve(hostname).then(
      (found) => {
        const family = lookupOptions.family === 4 || lookupOptions.family === 6 ? lookupOptions.family : undefined;
        const addresses = family ? found.filter((a) => a.family === family) : found;
        if (addresses.length === 0) return callback(new Error(`${hostname} has no address`), []);
        if (!isAllowedHost(hostname, policy)) {
          for (const { address } of addresses) {
            const verdict = checkAddress(address, policy);
            if (!verdict.allowed) {
              return callback(new BlockedAddressError(`${hostname} resolves to ${verdict.reason}`), []);
            }
          }
        }
        if (lookupOptions.all) callback(null, addresses);
        else callback(null, addresses[0].address, addresses[0].family);
      },
      (err: Error) => callback(err, []),
    );
  };

  const base = buildConnector({
    timeout: Math.min(10_000, timeoutMs),
    lookup,
    ...(ca ? { ca } : {}),
  } as buildConnector.BuildOptions);
  const connect: buildConnector.connector = (target, callback) => {
    if (isIP(target.hostname)) {
      const verdict = checkAddress(target.hostname, policy);
      if (!verdict.allowed) {
        callback(new BlockedAddressError(`${target.hostname} is not reachable: ${verdict.reason}`), null);
        return;
      }
    }
    base(target, callback);
  };

  return new Agent({
    connect,
    headersTimeout: timeoutMs,
    // The longest silence between two body chunks.
    bodyTimeout: timeoutMs,
    // One call, one connection at a time: nothing to gain from pooling across calls.
    pipelining: 1,
  });
}
