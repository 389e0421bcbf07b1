import { errorMessage } from "../../../src/errors.js";
import { binaryName } from "../../../src/iptables/binaries.js";
import { IptablesError, type IptablesRunner } from "../../../src/iptables/exec.js";
import { iptablesRedirector } from "../../../src/iptables/redirector.js";
import type { Backend, IptablesBackend, Redirector } from "../../../src/redirect/redirector.js";
import type { Family } from "../../../src/redirect/spec.js";
import { emptyTable } from "../../../src/redirect/table.js";
import type { FakeNatTable } from "./nat-table.js";

/** What the fake iptables and nftables work on: the tables of the netns entered, the faults to give, what was done. */
export interface FakeFirewallNode {
  tableHere(family: Family): FakeNatTable;
  /** Restores of a family fail with this stderr. */
  readonly failRestore: Partial<Record<Family, string>>;
  /** What nf_tables answers a read with, when it fails. */
  nftablesProblem: Error | undefined;
  readonly events: string[];
  /** Runners handed out and not closed yet. */
  openRunners: number;
}

/**
 * The real iptables redirector over the node's fake iptables. nftables is only a kernel
 * that answers reads (empty) or, with nftablesProblem, fails them: what STATUS asks; the
 * netns tests cover the rest.
 */
export function fakeRedirector(node: FakeFirewallNode, backend: Backend): Redirector {
  if (backend !== "nftables") return iptablesRedirector(fakeRunner(node, backend));
  const unavailable = async (): Promise<never> => {
    throw new Error("the fake node's nftables only answers reads");
  };
  return {
    backend,
    read: async () => {
      if (node.nftablesProblem) throw node.nftablesProblem;
      return emptyTable(true);
    },
    apply: unavailable,
    remove: unavailable,
    expected: (plan) => plan,
    close: () => undefined,
  };
}

/** A runner over the nat tables of the netns the caller is in, as iptables-save and iptables-restore --noflush. */
export function fakeRunner(node: FakeFirewallNode, backend: IptablesBackend): IptablesRunner {
  node.openRunners++;
  return {
    backend,
    save: async (family) => node.tableHere(family).save(),
    restore: async (family, text) => {
      const stderr = node.failRestore[family];
      const refused = (message: string) => new IptablesError(binaryName(backend, family, "restore"), ["--noflush"], 1, message, undefined);
      if (stderr !== undefined) throw refused(stderr);
      try {
        node.tableHere(family).restore(text);
      } catch (error) {
        throw refused(errorMessage(error));
      }
      node.events.push(`restore ${family}`);
    },
    close: () => void node.openRunners--,
  };
}
