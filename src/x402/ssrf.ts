/** Outbound request safety: private, loopback and link-local seller addresses are refused unless allowed. */
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from "node:dns";
import { lookup } from "node:dns/promises";
import { BlockList, isIP } from "node:net";

const PRIVATE = new BlockList();
for (const [net, prefix] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4],
] as const) {
  PRIVATE.addSubnet(net, prefix, "ipv4");
}
// IPv6 ranges refused outright. Ranges that embed an IPv4 address (mapped, compatible, NAT64, 6to4) are checked by
// the IPv4 they carry instead, below.
for (const [net, prefix] of [
  ["::", 128],
  ["::1", 128],
  ["64:ff9b:1::", 48], // NAT64 for local use (RFC 8215): the embedded IPv4 may be anywhere, and is the network's own
  ["100::", 64], // discard-only (RFC 6666)
  ["fc00::", 7],
  ["fe80::", 10],
  ["ff00::", 8],
] as const) {
  PRIVATE.addSubnet(net, prefix, "ipv6");
}

/** The eight 16-bit groups of an IPv6 address (zone id dropped, a trailing dotted IPv4 read as two groups). */
function ipv6Groups(ip: string): number[] | null {
  let text = ip.replace(/%.*$/, "").toLowerCase();
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number);
    text = text.slice(0, dotted.index) + `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const halves = text.split("::");
  if (halves.length > 2) return null;
  const part = (h: string) => (h ? h.split(":").map((g) => parseInt(g, 16)) : []);
  const head = part(halves[0]);
  const tail = halves.length === 2 ? part(halves[1]) : [];
  const fill = 8 - head.length - tail.length;
  if (halves.length === 2 ? fill < 0 : fill !== 0) return null;
  const groups = [...head, ...new Array<number>(halves.length === 2 ? fill : 0).fill(0), ...tail];
  return groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : null;
}

const ipv4Of = (hi: number, lo: number) => `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`;

/**
 * The IPv4 address an IPv6 address carries, for the forms that reach it: IPv4-mapped ::ffff:0:0/96,
 * IPv4-compatible ::/96 (deprecated; still routed to the IPv4 by some stacks), NAT64 64:ff9b::/96 (RFC 6052) and
 * 6to4 2002::/16 (RFC 3056). Null for any other address.
 */
export function embeddedIpv4(ip: string): string | null {
  const g = ipv6Groups(ip);
  if (!g) return null;
  const zeros = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  if (zeros(0, 5) && g[5] === 0xffff) return ipv4Of(g[6], g[7]); // ::ffff:a.b.c.d
  if (zeros(0, 6)) return ipv4Of(g[6], g[7]); // ::a.b.c.d (also :: and ::1, as 0.0.0.0 and 0.0.0.1)
  if (g[0] === 0x64 && g[1] === 0xff9b && zeros(2, 6)) return ipv4Of(g[6], g[7]); // 64:ff9b::a.b.c.d
  if (g[0] === 0x2002) return ipv4Of(g[1], g[2]); // 2002:AABB:CCDD::
  return null;
}

export function isPrivateAddress(ip: string): boolean {
  const family = isIP(ip);
  if (family === 4) return PRIVATE.check(ip, "ipv4");
  if (family === 6) {
    const v4 = embeddedIpv4(ip);
    if (v4) return PRIVATE.check(v4, "ipv4");
    return PRIVATE.check(ip.replace(/%.*$/, ""), "ipv6");
  }
  return true; // not an IP at all: refuse rather than guess
}

/** Resolves a host and returns the private addresses among its answers (all of them must be public). */
export async function privateAddressesOf(hostname: string): Promise<string[]> {
  const host = hostname.replace(/^\[|\]$/g, "");
  const addresses = isIP(host) ? [host] : (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);
  return addresses.filter(isPrivateAddress);
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A DNS lookup for outgoing connections that refuses private addresses at connect time. Checking a host first and
 * connecting later would let a name resolve to a public address for the check and a private one for the connection
 * (DNS rebinding); this lookup is the one the connection uses.
 */
export function publicOnlyLookup(hostname: string, options: LookupOptions, callback: LookupCallback): void {
  dnsLookup(hostname, { ...options, all: true, verbatim: true }, (err, addresses) => {
    if (err) {
      callback(err, "");
      return;
    }
    const list = addresses;
    const refused = list.filter((a) => isPrivateAddress(a.address));
    if (refused.length || list.length === 0) {
      const e: NodeJS.ErrnoException = new Error(`${hostname} resolves to a private address`);
      e.code = "EPRIVATEADDRESS";
      callback(e, "");
      return;
    }
    if (options.all) {
      callback(null, list);
      return;
    }
    callback(null, list[0].address, list[0].family);
  });
}
