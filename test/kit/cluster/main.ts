// The real cluster by hand: `bun test/kit/cluster/main.ts up [--nodes N]` starts it and leaves
// it running (kubectl --kubeconfig /var/lib/meshcni-cluster/admin.kubeconfig), `down` removes
// it and whatever a failed run left.
import { parseArgs } from "node:util";
import { RealCluster } from "./cluster.js";
import { paths } from "./layout.js";
import { components, tearDown } from "./teardown.js";

const { positionals, values } = parseArgs({ allowPositionals: true, options: { nodes: { type: "string", default: "1" } } });
const [command] = positionals;
const nodes = Number(values.nodes);
if (command === "up" && Number.isInteger(nodes) && nodes >= 1) {
  await new RealCluster({ nodes }).up((line) => console.log(line));
  console.log(`kubectl --kubeconfig ${paths.adminKubeconfig}`);
} else if (command === "down") {
  await tearDown(await components());
} else {
  console.error("usage: main.ts up [--nodes N] | down");
  process.exit(2);
}
