import { promises as dns, type LookupAddress } from "node:dns";
import { isIP } from "node:net";
import { Agent, buildConnector } from "undici";
import { type AddressPolicy, checkAddress, isAllowedHost } from "./address-policy.js";

/** Resolves a host name to all its addresses (dns.lookup by default, so /etc/hosts counts too). */
export type Resolver = (hostname: string) => Promise<LookupAddress[]>;

/** Thrown (as the connection error) when a host resolves to, or is, an address the policy refuses. */
export class BlockedAddressError extends Error {
  override readonly name = "BlockedAddressError";
}

type LookupCallback = (err: Error | null, address: string | LookupAddress[], family?: number) => void;

/** An undici Agent that connects only to checked addresses: a name is resolved once per connection, in the connector,
 * and the socket gets exactly the addresses checked (no rebinding); IP literals are checked by the connector itself.
 * One refused address refuses the host: a name that mixes public and private addresses is a trick. */
export function createPinnedAgent(
  policy: AddressPolicy,
  timeoutMs: number,
  resolve: Resolver = (hostname) => dns.lookup(hostname, { all: true, verbatim: true }),
  ca?: string | Buffer,
): Agent {
  const lookup = (hostname: string, { all, family }: { all?: boolean; family?: number }, callback: LookupCallback) => {
    resolve(hostname).then(
      (found) => {
        const addresses = family === 4 || family === 6 ? found.filter((a) => a.family === family) : found;
        if (addresses.length === 0) return callback(new Error(`${hostname} has no address`), []);
        for (const { address } of isAllowedHost(hostname, policy) ? [] : addresses) {
          const verdict = checkAddress(address, policy);
          if (!verdict.allowed)
            return callback(new BlockedAddressError(`${hostname} resolves to ${verdict.reason}`), []);
        }
        if (all) callback(null, addresses);
        else callback(null, addresses[0].address, addresses[0].family);
      },
      (err: Error) => callback(err, []),
    );
  };

  const base = buildConnector({ timeout: Math.min(10_000, timeoutMs), lookup, ca } as buildConnector.BuildOptions);
  const connect: buildConnector.connector = (target, callback) => {
    const verdict = isIP(target.hostname) ? checkAddress(target.hostname, policy) : undefined;
    if (verdict && !verdict.allowed) {
      callback(new BlockedAddressError(`${target.hostname} is not reachable: ${verdict.reason}`), null);
    } else base(target, callback);
  };

  return new Agent({
    connect,
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs, // the longest silence between two body chunks
    // One call, one connection at a time: nothing to gain from pooling across calls.
    pipelining: 1,
  });
}
