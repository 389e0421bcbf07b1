import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { execa } from "execa";
import { conflist } from "../agent/host.js";
import { FakeApiServer, podObject } from "../api/server.js";
import { TestNetwork } from "../netns/network.js";
import { invokePlugin } from "../netns/plugin-process.js";
import { meshcniBinary } from "../paths.js";

/**
 * Many meshed pods on one node, each a netns that went through meshcni's ADD (run
 * directly: no bridge is needed to write and record the redirect), with its pod in the
 * API server. For audit at scale.
 */
export class PodFleet {
  readonly api = new FakeApiServer();
  readonly net = new TestNetwork(60);
  readonly node = "fleet-node";
  kubeconfig = "";

  async start(count: number, parallel = 4): Promise<void> {
    await this.api.start();
    this.kubeconfig = this.api.writeKubeconfig();
    const conf = {
      cniVersion: "1.0.0",
      name: "fleet",
      type: "meshcni",
      state_dir: this.net.stateDir,
      kubernetes: { kubeconfig: this.kubeconfig },
      linkerd: { "iptables-mode": "nft" },
    };
    // The node's chain, as the audit reads meshcni's entry from it for each pod's plan.
    const { cniVersion, name, ...entry } = conf;
    writeFileSync(join(this.net.confDir, "fleet.conflist"), conflist(name, [entry], { cniVersion }));
    const indexes = Array.from({ length: count }, (_, i) => i);
    for (let i = 0; i < indexes.length; i += parallel) {
      await Promise.all(
        indexes.slice(i, i + parallel).map(async (index) => {
          const name = `pod-${index}`;
          this.api.addPod(
            podObject("fleet", name, {
              proxy: "container",
              nodeName: this.node,
              podIP: `10.252.${index >> 8}.${index & 255}`,
              owned: true,
            }),
          );
          const netns = await this.net.addNetns(String(index));
          const added = await invokePlugin(
            {
              CNI_COMMAND: "ADD",
              CNI_CONTAINERID: `fleet-${index}`,
              CNI_NETNS: this.net.netnsPath(netns),
              CNI_IFNAME: "eth0",
              CNI_ARGS: `K8S_POD_NAMESPACE=fleet;K8S_POD_NAME=${name}`,
            },
            conf,
          );
          if (added.exitCode !== 0) throw new Error(`ADD of ${name} failed: ${added.stdout}`);
        }),
      );
    }
  }

  audit() {
    return execa(
      meshcniBinary,
      [
        "audit",
        ...["--node", this.node, "--kubeconfig", this.kubeconfig, "--state-dir", this.net.stateDir, "--net-dir", this.net.confDir],
        ...["--output", "json"],
      ],
      { reject: false },
    );
  }

  async stop(): Promise<void> {
    await this.net.cleanup();
    await this.api.stop();
  }
}
