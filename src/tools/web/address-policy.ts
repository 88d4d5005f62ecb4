import ipaddr from "ipaddr.js";
import { attempt } from "../../attempt.js";
import { allowEntryKind } from "../../config/web.js";

/** Which addresses web_fetch may connect to; the pinned connector (pinned-agent.ts) asks about every one it uses.
 * Only public unicast: loopback, private, link-local (cloud metadata at 169.254.169.254), CGNAT, multicast, broadcast,
 * unspecified, reserved and documentation ranges, IPv6 unique-local and link-local are refused, and so is every IPv6
 * form embedding a refused IPv4 address (IPv4-mapped, IPv4-translated, NAT64, 6to4). Only the user's allowlist
 * (CIDR ranges and host names) gets around it. */

type Address = ipaddr.IPv4 | ipaddr.IPv6;

export interface AddressPolicy {
  /** Networks the user opened on purpose, e.g. their own LAN. */
  readonly cidrs: ReadonlyArray<[Address, number]>;
  /** Host names (lower case, punycode, no trailing dot) whose addresses are not checked. */
  readonly hosts: ReadonlySet<string>;
}

export type AddressVerdict = { allowed: true; address: string } | { allowed: false; reason: string };

export function compilePolicy(allow: readonly string[] = []): AddressPolicy {
  const cidrs: Array<[Address, number]> = [];
  const hosts = new Set<string>();
  for (const entry of allow) {
    const kind = allowEntryKind(entry);
    if (kind === "cidr") cidrs.push(ipaddr.parseCIDR(entry.trim()));
    else if (kind === "ip") {
      const address = ipaddr.parse(stripBrackets(entry.trim()));
      cidrs.push([address, address.kind() === "ipv4" ? 32 : 128]);
    } else if (kind === "host") hosts.add(normalizeHost(entry));
    else throw new Error(`"${entry}" is neither an IP address, a CIDR range nor a host name`);
  }
  return { cidrs, hosts };
}

export function normalizeHost(host: string): string {
  return host.trim().toLowerCase().replace(/\.$/, "");
}

/** True when the user listed this host name: its addresses are then trusted whatever they are. */
export function isAllowedHost(host: string, policy: AddressPolicy): boolean {
  return policy.hosts.has(normalizeHost(host));
}

/** May we connect to this address? Any spelling ipaddr.js understands: dotted, decimal (2130706433), hex (0x7f.1),
 * octal (0177.0.0.1), short (127.1), bracketed IPv6, zone ids. */
export function checkAddress(input: string, policy: AddressPolicy): AddressVerdict {
  const address: Address | undefined = attempt(() => ipaddr.parse(stripBrackets(input.trim())));
  if (!address) return { allowed: false, reason: `"${input}" is not an IP address` };
  const shown = address.toString();
  if (policy.cidrs.some((cidr) => inRange(address, cidr))) return { allowed: true, address: shown };
  const blocked = blockedRange(address, policy);
  return blocked ? { allowed: false, reason: `${shown} is ${blocked}` } : { allowed: true, address: shown };
}

/** The name of the refused range the address falls in, or undefined for a public unicast address. */
function blockedRange(address: Address, policy: AddressPolicy): string | undefined {
  if (address.kind() === "ipv4") {
    const range = address.range();
    return range === "unicast" ? undefined : `a ${describe(range)} address`;
  }
  const v6 = address as ipaddr.IPv6;
  const embedded = embeddedIPv4(v6);
  if (embedded) {
    if (policy.cidrs.some((cidr) => inRange(embedded, cidr))) return undefined;
    const inner = blockedRange(embedded, policy);
    return inner ? `an IPv6 form of ${embedded.toString()}, ${inner}` : undefined;
  }
  const range = v6.range();
  if (range === "unicast" && !inRange(v6, IPV4_COMPATIBLE)) return undefined;
  return `a ${describe(range === "unicast" ? "ipv4Compatible" : range)} address`;
}

/** The IPv4 host reached by IPv4-mapped (::ffff:a.b.c.d), IPv4-translated (::ffff:0:a.b.c.d), well-known NAT64
 * (64:ff9b::a.b.c.d) and 6to4 (2002:AABB:CCDD::) addresses. Local-use NAT64 (64:ff9b:1::/48) has no fixed layout:
 * refused. */
function embeddedIPv4(address: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  const range = address.range();
  const p = address.parts;
  const last32 = () => new ipaddr.IPv4([p[6] >> 8, p[6] & 0xff, p[7] >> 8, p[7] & 0xff]);
  if (range === "ipv4Mapped" || range === "rfc6145") return last32();
  if (range === "rfc6052" && inRange(address, NAT64_WELL_KNOWN)) return last32();
  if (range === "6to4") return new ipaddr.IPv4([p[1] >> 8, p[1] & 0xff, p[2] >> 8, p[2] & 0xff]);
}

const NAT64_WELL_KNOWN: [Address, number] = ipaddr.parseCIDR("64:ff9b::/96");
/** ::a.b.c.d, deprecated, and some stacks still route it as IPv4: refused outright. */
const IPV4_COMPATIBLE: [Address, number] = ipaddr.parseCIDR("::/96");

const NAMES: Record<string, string> = {
  ...Object.fromEntries(
    ["unspecified", "broadcast", "multicast", "loopback", "private", "reserved"].map((r) => [r, r]),
  ),
  linkLocal: "link-local",
  carrierGradeNat: "carrier-grade NAT (100.64.0.0/10)",
  uniqueLocal: "unique-local (fc00::/7)",
  deprecatedSiteLocal: "site-local",
  rfc6052: "local-use NAT64",
  teredo: "Teredo",
  ipv4Compatible: "IPv4-compatible IPv6",
};

function describe(range: string): string {
  return NAMES[range] ?? `special-purpose (${range})`;
}

function inRange(address: Address, [network, bits]: [Address, number]): boolean {
  return address.kind() === network.kind() && address.match(network, bits);
}

function stripBrackets(value: string): string {
  return value.startsWith("[") && value.endsWith("]") ? value.slice(1, -1) : value;
}

export type TargetVerdict = { allowed: true; url: URL } | { allowed: false; reason: string };

/** May web_fetch request this URL? http(s), no user name or password, and a permitted IP literal or a name (the
 * connector checks its addresses on resolving). WHATWG URL parsing has already made odd IPv4 spellings (2130706433,
 * 0x7f.1, 127.1, 127。0。0。1) dotted and IDNs punycode, so what is checked here is what undici connects to. */
export function checkTarget(raw: string, policy: AddressPolicy, base?: URL): TargetVerdict {
  const url = attempt(() => new URL(raw, base));
  if (!url) return { allowed: false, reason: `"${raw}" is not a valid URL` };
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return { allowed: false, reason: `only http and https URLs can be fetched, not ${url.protocol}` };
  }
  if (url.username || url.password) {
    return { allowed: false, reason: "URLs with a user name or password in them are not fetched" };
  }
  const host = stripBrackets(url.hostname);
  if (host === "") return { allowed: false, reason: `"${raw}" has no host` };
  if (ipaddr.isValid(host)) {
    const verdict = checkAddress(host, policy);
    if (!verdict.allowed) return { allowed: false, reason: `${url.host} is not reachable: ${verdict.reason}` };
  }
  url.hash = "";
  return { allowed: true, url };
}
