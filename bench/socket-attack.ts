// Issue 41's connection attack on the agent's plugin socket, in the agent's memory cgroup as
// the DaemonSet runs it (limit 224Mi): a root caller opens 256 connections and sends each a
// question of 1 MiB that never ends, and comes back when closed. Before the socket's bounds
// the cgroup hit its limit and the kernel killed the agent (here: 224 MB, 1 OOM kill, 0 of 28
// plugin questions answered); the figures are what it holds now, and whether a plugin asking
// meanwhile is still answered.
import { connect, type Socket } from "node:net";
import { AgentHarness } from "../test/kit/agent/harness.js";
import { askAgent } from "../test/kit/agent/socket.js";
import { FakeApiServer, podObject } from "../test/kit/api/server.js";
import { sleep } from "../test/kit/common.js";
import { MemoryCgroup } from "./cgroup.js";

const connections = 256;
const lineBytes = 1 << 20;
const holdMs = 30_000;
const limitBytes = 224 << 20;

export interface SocketAttack {
  /** The cgroup's peak before the attack: the agent's start (its binary copied: page cache, charged here too) and a quiet while. */
  idlePeakMb: number;
  peakMb: number;
  agentPeakRssMb: number;
  oomKills: number;
  answeredDuring: number;
  askedDuring: number;
  targets: Array<{ target: string; value: string; met: boolean }>;
}

/** One attacker: connects, then writes its never-ending question in 64 KiB pieces while the agent takes them. */
function attacker(path: string, sockets: Socket[]): void {
  const socket = connect(path);
  sockets.push(socket);
  socket.on("error", () => {});
  socket.on("connect", async () => {
    const piece = Buffer.alloc(64 << 10, "x".charCodeAt(0));
    for (let sent = 0; sent < lineBytes && !socket.destroyed; sent += piece.length) {
      if (!socket.write(piece)) await new Promise((resolve) => socket.once("drain", resolve));
    }
  });
}

export async function benchSocketAttack(): Promise<SocketAttack> {
  const api = await new FakeApiServer().start();
  api.addPod(podObject("bench", "web", { proxy: "container", nodeName: "bench-node", podIP: "10.254.0.2" }));
  const host = new AgentHarness();
  const cgroup = MemoryCgroup.create(`meshcni-bench-attack-${process.pid}`).limit(limitBytes);
  host.wrap = (command, args) => cgroup.wrap(command, args);
  const sockets: Socket[] = [];
  try {
    await host.startWithApi(api, ["--node", "bench-node"]);
    await host.waitFor(() => host.logs.some((line) => line.msg === "answering the plugin"), 20_000);
    const path = String(host.logs.find((line) => line.msg === "answering the plugin")!.socket);
    await sleep(5000);
    const idlePeakMb = cgroup.peakMb();
    for (let i = 0; i < connections; i++) attacker(path, sockets);
    let askedDuring = 0;
    let answeredDuring = 0;
    for (const end = Date.now() + holdMs; Date.now() < end; await sleep(1000)) {
      askedDuring++;
      const answer = await Promise.race([askAgent(path, { get: "namespace", name: "bench" }).catch(() => undefined), sleep(2000)]);
      if (answer && "object" in answer) answeredDuring++;
      // The attackers come back as the agent closes them, as a determined one would.
      for (let i = sockets.filter((socket) => !socket.destroyed).length; i < connections; i++) attacker(path, sockets);
    }
    const peakMb = cgroup.peakMb();
    const oomKills = cgroup.oomKills();
    const agentPeakRssMb = oomKills === 0 ? Math.round(host.peakRssMb() * 10) / 10 : Number.NaN;
    const result = {
      idlePeakMb,
      peakMb,
      agentPeakRssMb,
      oomKills,
      answeredDuring,
      askedDuring,
      targets: [
        {
          target: `the cgroup's peak under attack < its limit ${limitBytes >> 20} MiB`,
          value: `${peakMb} MB`,
          met: peakMb < limitBytes / 2 ** 20,
        },
        { target: "no OOM kill in its cgroup", value: String(oomKills), met: oomKills === 0 },
        {
          target: "a plugin answered meanwhile, 9 in 10",
          value: `${answeredDuring}/${askedDuring}`,
          met: answeredDuring * 10 >= askedDuring * 9,
        },
      ],
    };
    console.log(
      `\nthe plugin's socket under ${connections} connections of ${lineBytes >> 20} MiB unfinished questions, ${holdMs / 1000} s, in a ${limitBytes >> 20} MiB cgroup`,
    );
    console.log(`${"the agent's cgroup, peak before (its start, page cache included)".padEnd(68)}${idlePeakMb} MB`);
    console.log(`${"the agent's cgroup, peak under attack".padEnd(68)}${peakMb} MB`);
    console.log(`${"the agent's own peak RSS (VmHWM)".padEnd(68)}${agentPeakRssMb} MB`);
    console.log(`${"a plugin's questions answered meanwhile".padEnd(68)}${answeredDuring} of ${askedDuring}`);
    for (const target of result.targets) console.log(`${target.met ? "met   " : "MISSED"}  ${target.target.padEnd(60)}${target.value}`);
    return result;
  } finally {
    for (const socket of sockets) socket.destroy();
    await host.cleanup();
    await api.stop();
    cgroup.remove();
  }
}
