// The real cluster by hand: `bun test/kit/cluster/main.ts up` starts it and leaves it running
// (kubectl --kubeconfig /var/lib/meshcni-cluster/admin.kubeconfig), `down` removes it and
// whatever a failed run left.
import { RealCluster } from "./cluster.js";
import { paths } from "./layout.js";
import { components, tearDown } from "./teardown.js";

const command = process.argv[2];
if (command === "up") {
  await new RealCluster().up((line) => console.log(line));
  console.log(`kubectl --kubeconfig ${paths.adminKubeconfig}`);
} else if (command === "down") {
  await tearDown(await components());
} else {
  console.error("usage: main.ts up | down");
  process.exit(2);
}
