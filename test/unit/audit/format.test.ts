import { describe, expect, it } from "vitest";
import { renderTable, report } from "../../../src/audit/format.js";

describe("audit output", () => {
  it("prints a row per pod, the differences of a drifted pod below it, and a summary", () => {
    const text = renderTable(
      report("n1", [
        { namespace: "shop", name: "cart", uid: "1", status: "missing", details: ["no ADD record"] },
        { namespace: "shop", name: "search", uid: "2", status: "drifted", details: ["ipv4: a", "ipv4: b"] },
      ]),
    );
    expect(text.split("\n")).toEqual([
      "NAMESPACE  POD     STATUS   DETAIL",
      "shop       cart    missing  no ADD record",
      "shop       search  drifted  ipv4: a",
      "                            ipv4: b",
      "",
      "node n1: 2 meshed pods, 0 protected, 1 missing, 1 drifted, 0 unknown",
      "",
    ]);
  });
});
