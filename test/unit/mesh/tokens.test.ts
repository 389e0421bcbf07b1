import { describe, expect, it } from "vitest";
import { parseIdToken, parsePortNumberToken, parsePortToken, parseSubnetToken, splitList } from "../../../src/mesh/tokens.js";

const notAPort = { ok: false, reason: "ports are whole numbers from 1 to 65535" };
const notACidr = { ok: false, reason: "expected a CIDR like 10.0.0.0/8 or fd00::/64 (a prefix length is required)" };
const notAnId = { ok: false, reason: "expected a numeric id from 0 to 4294967294" };

describe("port tokens (netconf ports, skip-inbound-ports, skip-outbound-ports)", () => {
  it("reads a port or an ordered range, as a number or a string, trimmed; the bounds 1 and 65535 included", () => {
    expect(parsePortToken("8080")).toEqual({ ok: true, value: { from: 8080, to: 8080 } });
    expect(parsePortToken(443)).toEqual({ ok: true, value: { from: 443, to: 443 } });
    expect(parsePortToken(" 8000-8010 ")).toEqual({ ok: true, value: { from: 8000, to: 8010 } });
    expect(parsePortToken("1-65535")).toEqual({ ok: true, value: { from: 1, to: 65535 } });
    expect(parsePortToken("9000-9000")).toEqual({ ok: true, value: { from: 9000, to: 9000 } });
  });

  it.each(["0", "65536", "123456", "", "80-", "-80", "http", "8o", "+80", "1e3", "8000- 8010", "8000 -8010", "0-80", "80-65536"])(
    "refuses %j: not whole numbers from 1 to 65535",
    (token) => expect(parsePortToken(token)).toEqual(notAPort),
  );

  it("says why a range is refused", () => {
    expect(parsePortToken("9000-8000")).toEqual({ ok: false, reason: "a range must run from low to high" });
    expect(parsePortToken("80-90-100")).toEqual({ ok: false, reason: "expected a port or a range like 8000-8010" });
  });

  it("reads a single port where no range fits (the proxy's ports, ports-to-redirect)", () => {
    expect(parsePortNumberToken(" 4143 ")).toEqual({ ok: true, value: 4143 });
    expect(parsePortNumberToken(65535)).toEqual({ ok: true, value: 65535 });
    expect(parsePortNumberToken(1)).toEqual({ ok: true, value: 1 });
    for (const token of ["8000-8010", "0", "65536", "41 40", "x4143", "4143x"]) expect(parsePortNumberToken(token)).toEqual(notAPort);
  });
});

describe("subnet tokens (subnets-to-ignore, skip-subnets)", () => {
  it("keeps a CIDR as given, trimmed, host bits and all, up to the family's longest prefix", () => {
    for (const cidr of ["10.0.0.0/8", "1.1.1.1/24", "10.0.0.9/32", "0.0.0.0/0", "fd00::/64", "fd00::5/128", "::/0"])
      expect(parseSubnetToken(cidr)).toEqual({ ok: true, value: cidr });
    expect(parseSubnetToken(" 10.1.2.3/16 ")).toEqual({ ok: true, value: "10.1.2.3/16" });
  });

  it.each([
    ["10.0.0.0", "no prefix length"],
    ["10.0.0.0/", "an empty prefix length"],
    ["10.0.0.0/33", "a prefix past 32 for IPv4"],
    ["fd00::/129", "a prefix past 128 for IPv6"],
    ["10.0.0.0/08", "a prefix with a leading zero"],
    ["10.0.0.0/00", "a prefix of two zeros"],
    ["10.0.0.0/8a", "a prefix that is no number"],
    ["10.0.0.0/8/8", "two prefixes"],
    ["10.1/8", "an inet_aton shorthand"],
    ["010.0.0.0/8", "an address part with a leading zero"],
    ["fe80::1%eth0/64", "an IPv6 zone"],
    ["example.com/8", "a name"],
  ])("refuses %j (%s)", (token) => expect(parseSubnetToken(token)).toEqual(notACidr));
});

describe("id tokens (proxy-uid, proxy-gid)", () => {
  it("reads a numeric id from 0 to 4294967294, trimmed", () => {
    expect(parseIdToken(" 2102 ")).toEqual({ ok: true, value: 2102 });
    expect(parseIdToken(0)).toEqual({ ok: true, value: 0 });
    expect(parseIdToken("4294967294")).toEqual({ ok: true, value: 4294967294 });
  });

  it.each(["4294967295", "99999999999", "-1", "linkerd", "uid2102", "2102x", "2102.5", ""])("refuses %j", (token) =>
    expect(parseIdToken(token)).toEqual(notAnId),
  );
});

describe("annotation lists", () => {
  it("splits on commas, trimmed, blank tokens dropped", () => {
    expect(splitList(" 80, 443 ,,8000-8010, ")).toEqual(["80", "443", "8000-8010"]);
    expect(splitList("")).toEqual([]);
  });
});
