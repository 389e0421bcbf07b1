import { describe, expect, it } from "vitest";
import { convertResult, resultAddresses } from "../../../src/cni/result.js";

describe("result conversion", () => {
  const modern = {
    cniVersion: "1.0.0",
    interfaces: [{ name: "eth0", mac: "aa:bb:cc:dd:ee:ff", sandbox: "/var/run/netns/x" }],
    ips: [
      { address: "10.1.0.5/24", gateway: "10.1.0.1", interface: 0 },
      { address: "fd00::5/64", interface: 0 },
    ],
    routes: [{ dst: "0.0.0.0/0" }],
    dns: { nameservers: ["10.96.0.10"] },
  };

  it("adds each IP's version going down to 0.4.0 / 0.3.x and keeps everything else", () => {
    const old = convertResult(modern, "0.3.1");
    expect(old).toEqual({
      ...modern,
      cniVersion: "0.3.1",
      ips: [
        { version: "4", address: "10.1.0.5/24", gateway: "10.1.0.1", interface: 0 },
        { version: "6", address: "fd00::5/64", interface: 0 },
      ],
    });
  });

  it("drops the version going up to 1.x, round-tripping", () => {
    expect(convertResult(convertResult(modern, "0.4.0"), "1.1.0")).toEqual({ ...modern, cniVersion: "1.1.0" });
  });

  it("lists the addresses a result gives", () => {
    expect(resultAddresses(modern)).toEqual(["10.1.0.5/24", "fd00::5/64"]);
    expect(resultAddresses(undefined)).toEqual([]);
  });

  it("drops the version from 1.0.0 on, and passes entries that are no IP object through untouched", () => {
    expect(convertResult(convertResult(modern, "0.4.0"), "1.0.0").ips).toEqual(modern.ips);
    const odd = { cniVersion: "1.0.0", ips: [null, "10.1.0.9/24", { interface: 0 }, { address: 5 }] };
    expect(convertResult(odd, "0.3.1").ips).toEqual([null, "10.1.0.9/24", { version: "4", interface: 0 }, { version: "4", address: 5 }]);
    expect(convertResult({ cniVersion: "1.0.0" }, "0.4.0")).toEqual({ cniVersion: "0.4.0" });
  });

  it("lists only the addresses it can read", () => {
    expect(resultAddresses({ ips: [null, { address: 5 }, { interface: 0 }, { address: "10.1.0.5/24" }] })).toEqual(["10.1.0.5/24"]);
    expect(resultAddresses({ ips: "10.1.0.5/24" })).toEqual([]);
  });
});
