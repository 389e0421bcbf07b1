import { describe, expect, it } from "vitest";
import { subnetNetwork } from "../../../src/redirect/cidr.js";

describe("a skip-subnet's network, as iptables-save prints its -s", () => {
  it.each([
    ["1.1.1.1/24", "1.1.1.0/24"],
    ["10.1.2.3/16", "10.1.0.0/16"],
    ["10.0.0.9/32", "10.0.0.9/32"],
    ["192.168.7.7/0", "0.0.0.0/0"],
    ["fd00:0:0:1::5/64", "fd00:0:0:1::/64"],
    ["2001:0db8:0000:0000:0000:0000:0000:0001/128", "2001:db8::1/128"],
    ["fd12:3456::1/8", "fd00::/8"],
  ])("%s is %s", (cidr, network) => expect(subnetNetwork(cidr)).toBe(network));
});
