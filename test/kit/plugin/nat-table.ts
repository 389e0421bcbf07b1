import { tokenize } from "../../../src/iptables/save.js";

const builtinChains = ["PREROUTING", "INPUT", "OUTPUT", "POSTROUTING"];

/**
 * One family's nat table in memory, read and written as iptables-save and
 * iptables-restore --noflush do: a declared chain is created or flushed, -N fails on an
 * existing chain, -D on a missing rule, -X on a used or non-empty chain, and a commit
 * applies all of its lines or none.
 */
export class FakeNatTable {
  chains = new Map<string, string[][]>(builtinChains.map((chain) => [chain, []]));

  save(): string {
    const lines = ["*nat"];
    for (const chain of this.chains.keys()) lines.push(`:${chain} ${builtinChains.includes(chain) ? "ACCEPT" : "-"} [0:0]`);
    for (const [chain, rules] of this.chains) {
      for (const rule of rules)
        lines.push(`-A ${chain} ${rule.map((token, i) => (rule[i - 1] === "--comment" ? `"${token}"` : token)).join(" ")}`);
    }
    return `${[...lines, "COMMIT", ""].join("\n")}`;
  }

  restore(text: string): void {
    const next = new Map([...this.chains].map(([chain, rules]) => [chain, rules.map((rule) => [...rule])]));
    const need = (chain: string, line: string) => {
      const rules = next.get(chain);
      if (!rules) throw new Error(`${line}: no chain ${chain}`);
      return rules;
    };
    for (const line of text.split("\n")) {
      if (line === "" || line === "*nat" || line === "COMMIT" || line.startsWith("#")) continue;
      const [verb, chain = "", ...args] = line.startsWith(":") ? [":", line.slice(1).split(" ")[0]!] : tokenize(line);
      const same = (rule: string[]) => rule.length === args.length && rule.every((token, i) => token === args[i]);
      if (verb === ":") next.set(chain, []);
      else if (verb === "-N") {
        if (next.has(chain)) throw new Error(`${line}: chain already exists`);
        next.set(chain, []);
      } else if (verb === "-A") need(chain, line).push(args);
      else if (verb === "-D") {
        const rules = need(chain, line);
        const index = rules.findIndex(same);
        if (index < 0) throw new Error(`${line}: no such rule`);
        rules.splice(index, 1);
      } else if (verb === "-F") need(chain, line).length = 0;
      else if (verb === "-X") {
        if (need(chain, line).length > 0) throw new Error(`${line}: chain is not empty`);
        if ([...next.values()].some((rules) => rules.some((rule) => rule.at(-1) === chain))) throw new Error(`${line}: chain is in use`);
        next.delete(chain);
      } else throw new Error(`fake iptables-restore does not know ${JSON.stringify(line)}`);
    }
    this.chains = next;
  }
}
