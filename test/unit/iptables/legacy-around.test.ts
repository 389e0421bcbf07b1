import { describe, expect, it } from "vitest";
import { legacyBypasses } from "../../../src/iptables/legacy-around.js";

const saved: Record<string, string> = {
  raw: [
    "*raw",
    ":PREROUTING ACCEPT [0:0]",
    ":OUTPUT ACCEPT [0:0]",
    "-A OUTPUT -p udp -j CT --notrack",
    "-A OUTPUT -j CT --zone 3",
    "COMMIT",
  ].join("\n"),
  nat: [
    "*nat",
    ":OUTPUT ACCEPT [0:0]",
    ":SNEAKY - [0:0]",
    "-A OUTPUT -p tcp -m tcp --dport 9090 -j SNEAKY",
    "-A SNEAKY -j REDIRECT --to-ports 8080",
    "-A UNREACHED -j DNAT --to-destination 1.2.3.4",
    "COMMIT",
  ].join("\n"),
};

describe("iptables-legacy's tables around the redirect", () => {
  it("runs no save for a netns with no legacy table, and only for the tables there", async () => {
    const asked: string[] = [];
    const save = async (binary: string, args: string[]) => {
      asked.push(`${binary} ${args.join(" ")}`);
      return saved[args[1]!]!;
    };
    expect(await legacyBypasses("nft", ["ipv4", "ipv6"], () => [], save)).toEqual([]);
    expect(asked).toEqual([]);
    const found = await legacyBypasses("nft", ["ipv4"], () => ["nat", "raw"], save);
    expect(asked).toEqual(["iptables-legacy-save -t raw", "iptables-legacy-save -t nat"]);
    // UDP untracked, and a CT target that tracks, are no way around a TCP redirect; a jump to a chain that redirects is.
    expect(found).toEqual([
      "ipv4: NAT that runs before the redirect lets traffic bypass the proxy: iptables-legacy nat: -A SNEAKY -j REDIRECT --to-ports 8080",
    ]);
  });

  it("reads `! -p udp` as matching TCP, and a save that fails as no answer (thrown), never as an empty table", async () => {
    const raw = ["*raw", ":OUTPUT ACCEPT [0:0]", "-A OUTPUT ! -p udp -j CT --notrack", "-A OUTPUT ! -p tcp -j NOTRACK", "COMMIT"].join(
      "\n",
    );
    expect(
      await legacyBypasses(
        "nft",
        ["ipv4"],
        () => ["raw"],
        async () => raw,
      ),
    ).toEqual(["ipv4: untracked TCP never reaches the redirect: iptables-legacy raw: -A OUTPUT ! -p udp -j CT --notrack"]);
    const failing = async () => {
      throw new Error("iptables-legacy-save timed out after 10 s and was killed");
    };
    await expect(legacyBypasses("nft", ["ipv4"], () => ["raw"], failing)).rejects.toThrow("timed out");
  });

  it("leaves the nat table to the legacy backend's own reading, which holds meshcni's rules", async () => {
    expect(
      await legacyBypasses(
        "legacy",
        ["ipv4"],
        () => ["nat"],
        async () => saved.nat!,
      ),
    ).toEqual([]);
  });
});
