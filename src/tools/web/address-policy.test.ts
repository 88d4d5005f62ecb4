/** The SSRF address policy as data: no connection is opened here. */
import { describe, expect, it } from "vitest";
import { checkAddress, checkTarget, compilePolicy, isAllowedHost } from "./address-policy.js";

const strict = compilePolicy([]);

describe("checkAddress refuses every address on the host's own network", () => {
  it.each([
    // loopback, in every spelling ipaddr.js accepts
    ["127.0.0.1", "loopback"],
    ["127.255.255.254", "loopback"],
    ["2130706433", "loopback"], // decimal
    ["0x7f000001", "loopback"], // one hex number
    ["0x7f.1", "loopback"], // hex, short
    ["0177.0.0.1", "loopback"], // octal
    ["0177.1", "loopback"],
    ["127.1", "loopback"], // short form
    ["::1", "loopback"],
    ["[::1]", "loopback"],
    ["0:0:0:0:0:0:0:1", "loopback"],
    // unspecified (connecting to 0.0.0.0 reaches the host itself on Linux)
    ["0.0.0.0", "unspecified"],
    ["0", "unspecified"],
    ["0.1.2.3", "unspecified"],
    ["::", "unspecified"],
    // private (RFC 1918)
    ["10.0.0.1", "private"],
    ["10.255.255.255", "private"],
    ["172.16.0.1", "private"],
    ["172.31.255.255", "private"],
    ["192.168.1.1", "private"],
    ["0xc0a80101", "private"],
    ["3232235777", "private"], // 192.168.1.1
    // link-local, including cloud metadata
    ["169.254.169.254", "link-local"],
    ["0xa9fea9fe", "link-local"],
    ["fe80::1", "link-local"],
    ["fe80::1%eth0", "link-local"],
    // CGNAT, multicast, broadcast, reserved, documentation
    ["100.64.0.1", "carrier-grade NAT"],
    ["100.127.255.254", "carrier-grade NAT"],
    ["224.0.0.1", "multicast"],
    ["239.255.255.250", "multicast"],
    ["ff02::1", "multicast"],
    ["255.255.255.255", "broadcast"],
    ["240.0.0.1", "reserved"],
    ["192.0.2.1", "reserved"],
    ["198.18.0.1", "reserved"],
    ["203.0.113.9", "reserved"],
    ["2001:db8::1", "reserved"],
    // IPv6 unique-local and site-local
    ["fc00::1", "unique-local"],
    ["fd12:3456:789a::1", "unique-local"],
    ["fec0::1", "site-local"],
    // IPv6 forms that carry a refused IPv4 address
    ["::ffff:127.0.0.1", "IPv6 form of 127.0.0.1, a loopback"],
    ["::ffff:7f00:1", "IPv6 form of 127.0.0.1, a loopback"],
    ["[::ffff:169.254.169.254]", "IPv6 form of 169.254.169.254, a link-local"],
    ["::ffff:0:10.0.0.1", "IPv6 form of 10.0.0.1, a private"], // IPv4-translated
    ["64:ff9b::127.0.0.1", "IPv6 form of 127.0.0.1, a loopback"], // NAT64
    ["64:ff9b::a9fe:a9fe", "IPv6 form of 169.254.169.254, a link-local"],
    ["2002:7f00:1::", "IPv6 form of 127.0.0.1, a loopback"], // 6to4
    ["2002:c0a8:101::1", "IPv6 form of 192.168.1.1, a private"],
    ["64:ff9b:1::1", "local-use NAT64"],
    ["::127.0.0.1", "127.0.0.1"], // ipaddr.js reads this as IPv4-mapped; refused either way
    ["::7f00:1", "IPv4-compatible"],
    ["2001::1", "Teredo"],
    // not an address at all
    ["localhost", "not an IP address"],
    ["127.0.0.1.", "not an IP address"],
    ["", "not an IP address"],
    ["1.2.3.4.5", "not an IP address"],
  ])("%s is refused (%s)", (input, why) => {
    const verdict = checkAddress(input, strict);
    expect(verdict.allowed).toBe(false);
    expect(verdict.allowed === false && verdict.reason).toContain(why);
  });

  it.each([
    ["93.184.215.14", "93.184.215.14"],
    ["1.1.1.1", "1.1.1.1"],
    ["16843009", "1.1.1.1"], // decimal spelling of a public address is fine
    ["8.8.8.8", "8.8.8.8"],
    ["100.63.255.255", "100.63.255.255"], // just below CGNAT
    ["172.32.0.1", "172.32.0.1"], // just above 172.16/12
    ["2606:4700:4700::1111", "2606:4700:4700::1111"],
    ["::ffff:1.1.1.1", "::ffff:101:101"],
    ["64:ff9b::1.1.1.1", "64:ff9b::101:101"],
    ["2002:101:101::1", "2002:101:101::1"],
  ])("%s is a public address", (input, shown) => {
    expect(checkAddress(input, strict)).toEqual({ allowed: true, address: shown });
  });
});

describe("the allowlist", () => {
  const lan = compilePolicy(["192.168.1.0/24", "fd00::/8", "10.0.0.5", "NAS.Home.", "::1"]);

  it("opens exactly the listed ranges, addresses and hosts", () => {
    expect(checkAddress("192.168.1.77", lan).allowed).toBe(true);
    expect(checkAddress("::ffff:192.168.1.77", lan).allowed).toBe(true);
    expect(checkAddress("192.168.2.1", lan).allowed).toBe(false);
    expect(checkAddress("fd00::5", lan).allowed).toBe(true);
    expect(checkAddress("fc00::5", lan).allowed).toBe(false);
    expect(checkAddress("10.0.0.5", lan).allowed).toBe(true);
    expect(checkAddress("10.0.0.6", lan).allowed).toBe(false);
    expect(checkAddress("::1", lan).allowed).toBe(true);
    expect(checkAddress("127.0.0.1", lan).allowed).toBe(false);
    expect(isAllowedHost("nas.home", lan)).toBe(true);
    expect(isAllowedHost("NAS.HOME.", lan)).toBe(true);
    expect(isAllowedHost("evil.nas.home", lan)).toBe(false);
  });

  it("rejects entries that are none of address, range or host", () => {
    expect(() => compilePolicy(["10.0.0.0/33"])).toThrow(/neither/);
    expect(() => compilePolicy(["http://x"])).toThrow(/neither/);
  });
});

describe("checkTarget", () => {
  it.each([
    ["file:///etc/passwd", "not file:"],
    ["gopher://127.0.0.1:6379/_INFO", "not gopher:"],
    ["ftp://example.com/", "not ftp:"],
    ["data:text/plain,hi", "not data:"],
    ["javascript:alert(1)", "not javascript:"],
    ["http://evil@127.0.0.1/", "user name or password"],
    ["http://example.com:pw@example.org/", "user name or password"],
    ["http://0/", "0.0.0.0 is not reachable"],
    ["http://0.0.0.0:8080/", "unspecified"],
    ["http://2130706433/", "127.0.0.1 is not reachable"],
    ["http://0x7f.1/", "127.0.0.1 is not reachable"],
    ["http://0177.0.0.01/", "127.0.0.1 is not reachable"],
    ["http://127.1/", "127.0.0.1 is not reachable"],
    ["http://127.0.0.1./", "127.0.0.1 is not reachable"],
    ["http://127。0。0。1/", "127.0.0.1 is not reachable"], // ideographic full stops
    ["http://１２７.０.０.１/", "127.0.0.1 is not reachable"], // full-width digits
    ["http://[::1]:22/", "[::1]:22 is not reachable"],
    ["http://[::ffff:127.0.0.1]/", "IPv6 form of 127.0.0.1"],
    ["http://[0:0:0:0:0:ffff:7f00:1]/", "IPv6 form of 127.0.0.1"],
    ["http://[fe80::1%25eth0]/", "not a valid URL"], // zone ids are not valid in URLs
    ["http://169.254.169.254/latest/meta-data/", "link-local"],
    ["http://[fd00::1]/", "unique-local"],
    ["http:\\\\127.0.0.1\\admin", "127.0.0.1 is not reachable"], // backslashes count as slashes
    ["http:/127.0.0.1/", "127.0.0.1 is not reachable"],
    ["  http://127.0.0.1/  ", "127.0.0.1 is not reachable"],
    ["http://127.0.0.1%2f@example.com/", "user name or password"],
    ["http://[::]/", "unspecified"],
    ["http://[::ffff:0:7f00:1]/", "IPv6 form of 127.0.0.1"],
    ["http://[64:ff9b::169.254.169.254]/", "IPv6 form of 169.254.169.254"],
    ["http://0x7f000001/", "127.0.0.1 is not reachable"],
    ["http://100.100.100.200/", "carrier-grade NAT"], // Alibaba Cloud's metadata service
    ["http://[fd00:ec2::254]/", "unique-local"], // AWS metadata over IPv6
    ["not a url", "not a valid URL"],
    ["http://", "not a valid URL"],
  ])("%s is refused (%s)", (raw, why) => {
    const verdict = checkTarget(raw, strict);
    expect(verdict.allowed).toBe(false);
    expect(verdict.allowed === false && verdict.reason).toContain(why);
  });

  it.each([
    ["https://example.com/a?b=c#frag", "https://example.com/a?b=c"],
    ["HTTP://EXAMPLE.com:8080", "http://example.com:8080/"],
    ["http://bücher.example/", "http://xn--bcher-kva.example/"],
    ["http://1.1.1.1/", "http://1.1.1.1/"],
    // Names are let through here; the connector checks what they resolve to.
    ["http://localhost/", "http://localhost/"],
    ["http://ⓛⓞⓒⓐⓛⓗⓞⓢⓣ/", "http://localhost/"],
  ])("%s may be requested as %s", (raw, href) => {
    const verdict = checkTarget(raw, strict);
    expect(verdict.allowed && verdict.url.href).toBe(href);
  });

  it("resolves a relative redirect against the page that sent it", () => {
    const verdict = checkTarget("/next", strict, new URL("https://example.com/a/b"));
    expect(verdict.allowed && verdict.url.href).toBe("https://example.com/next");
    const away = checkTarget("//127.0.0.1/x", strict, new URL("https://example.com/a"));
    expect(away.allowed).toBe(false);
  });
});
