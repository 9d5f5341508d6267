import { expect } from "chai";
import { embeddedIpv4, isPrivateAddress, privateAddressesOf, publicOnlyLookup } from "../../src/x402/ssrf";

const expectAll = (ips: string[], expected: boolean) => {
  for (const ip of ips) expect(isPrivateAddress(ip), ip).to.equal(expected);
};

describe("isPrivateAddress (outbound seller address check)", () => {
  it("refuses private, loopback, link-local, CGNAT, multicast and reserved IPv4", () => {
    expectAll(
      [
        "0.0.0.0",
        "10.0.0.1",
        "100.64.0.1",
        "127.0.0.1",
        "127.255.255.254",
        "169.254.169.254",
        "172.16.0.1",
        "172.31.255.255",
        "192.0.0.8",
        "192.168.1.1",
        "198.18.0.1",
        "224.0.0.1",
        "255.255.255.255",
      ],
      true,
    );
  });

  it("allows public IPv4", () => {
    expectAll(["8.8.8.8", "1.1.1.1", "172.32.0.1", "100.128.0.1", "93.184.216.34"], false);
  });

  it("refuses loopback, unspecified, ULA, link-local and multicast IPv6, and allows public IPv6", () => {
    expectAll(["::1", "::", "fc00::1", "fd12:3456::1", "fe80::1", "fe80::1%eth0", "ff02::1"], true);
    expectAll(["2606:4700:4700::1111", "2001:4860:4860::8888", "2a00:1450:4001:80b::200e"], false);
  });

  it("checks the IPv4 inside IPv4-mapped addresses, dotted or in hex", () => {
    expectAll(["::ffff:127.0.0.1", "::ffff:7f00:1", "::ffff:10.0.0.1", "::ffff:a9fe:a9fe", "0:0:0:0:0:ffff:c0a8:101"], true);
    expectAll(["::ffff:8.8.8.8", "::ffff:808:808"], false);
  });

  it("checks the IPv4 inside NAT64 64:ff9b::/96 addresses", () => {
    expectAll(["64:ff9b::7f00:1", "64:ff9b::127.0.0.1", "64:ff9b::a00:1", "64:ff9b::a9fe:a9fe", "64:ff9b:0:0:0:0:c0a8:101"], true);
    expectAll(["64:ff9b::808:808", "64:ff9b::8.8.8.8"], false);
  });

  it("checks the IPv4 inside IPv4-compatible ::/96 addresses", () => {
    expectAll(["::7f00:1", "::127.0.0.1", "::a00:1", "::c0a8:101", "::a9fe:a9fe"], true);
    expect(isPrivateAddress("::808:808")).to.equal(false);
  });

  it("checks the IPv4 inside 6to4 2002::/16 addresses", () => {
    expectAll(["2002:7f00:1::", "2002:7f00:1::1", "2002:a00:1:1::1", "2002:c0a8:101::", "2002:a9fe:a9fe::"], true);
    expect(isPrivateAddress("2002:808:808::1")).to.equal(false);
  });

  it("refuses local-use NAT64 64:ff9b:1::/48 and discard-only 100::/64 outright", () => {
    expectAll(["64:ff9b:1::808:808", "64:ff9b:1:ffff::1", "100::1", "100::ffff:ffff:ffff:ffff"], true);
    expect(isPrivateAddress("100:0:0:1::1")).to.equal(false); // outside 100::/64
  });

  it("refuses what is not an IP address", () => {
    expectAll(["", "localhost", "127.0.0.1.nip.io", "::ffff:999.0.0.1"], true);
  });

  it("embeddedIpv4 reads the IPv4 of each embedding form and nothing else", () => {
    expect(embeddedIpv4("::ffff:7f00:1")).to.equal("127.0.0.1");
    expect(embeddedIpv4("64:ff9b::c0a8:101")).to.equal("192.168.1.1");
    expect(embeddedIpv4("::a00:1")).to.equal("10.0.0.1");
    expect(embeddedIpv4("2002:7f00:1::")).to.equal("127.0.0.1");
    expect(embeddedIpv4("2606:4700:4700::1111")).to.equal(null);
    expect(embeddedIpv4("64:ff9b:1::7f00:1")).to.equal(null);
  });

  it("privateAddressesOf refuses IP literals in brackets, embedded forms included", async () => {
    expect(await privateAddressesOf("[64:ff9b::7f00:1]")).to.deep.equal(["64:ff9b::7f00:1"]);
    expect(await privateAddressesOf("[2002:7f00:1::]")).to.deep.equal(["2002:7f00:1::"]);
    expect(await privateAddressesOf("8.8.8.8")).to.deep.equal([]);
  });
});

describe("publicOnlyLookup (the lookup seller connections use: no DNS rebinding)", () => {
  const lookup = (host: string, all = false) =>
    new Promise<{ err: NodeJS.ErrnoException | null; address: unknown }>((resolve) =>
      publicOnlyLookup(host, { all }, (err, address) => resolve({ err, address })),
    );

  it("refuses, at connect time, a name that resolves to a private address", async () => {
    for (const all of [false, true]) {
      const { err } = await lookup("localhost", all);
      expect(err?.code).to.equal("EPRIVATEADDRESS");
    }
  });

  it("passes resolution errors through", async () => {
    const { err } = await lookup("no-such-host.invalid");
    expect(err).to.be.instanceOf(Error);
    expect(err?.code).to.not.equal("EPRIVATEADDRESS");
  });
});
