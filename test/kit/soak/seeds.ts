// The short soak's fixed draws (npm test): seeds that pass, so a red CI means a change broke
// something. Random seeds are drawn by `npm run soak`; one that finds something joins this
// list with its fix, at the faults that found it.
import { type SoakDraw, shortSoakKinds } from "./draw.js";

export const fixedDraws: Array<SoakDraw & { why: string }> = [
  {
    seed: 760103437,
    faults: 8,
    kinds: shortSoakKinds,
    why: "issue 56: the backend switched just after an API server restart (kubelet's cache gave the new agent the old netconf)",
  },
  {
    seed: 20277118,
    faults: 10,
    kinds: shortSoakKinds,
    why: "ten kinds the first draw lacks, each once: the agent's pod and process, etcd, the primary's installer, the signing key, a rollout",
  },
];
