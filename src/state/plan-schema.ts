import * as v from "valibot";

/** A family's rule plan as records keep it and the agent sends it. */
export const rulePlanSchema = v.object({
  family: v.picklist(["ipv4", "ipv6"]),
  chains: v.record(v.string(), v.array(v.array(v.string()))),
  jumps: v.array(v.object({ from: v.picklist(["PREROUTING", "OUTPUT"]), to: v.string(), args: v.array(v.string()) })),
});
