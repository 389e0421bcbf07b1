import type { AttachmentRecord, RecordStore } from "../../../src/state/records.js";

/** What a fake node keeps of the state dir: the records, the attachments' locks, what was done, the faults to give. */
export interface FakeRecordState {
  readonly records: Map<string, AttachmentRecord>;
  /** The attachments' locks: each the promise its last taker resolves on release. */
  readonly locks: Map<string, Promise<void>>;
  /** Whether each lock taken might make the locks dir (a DEL finding no record might not). */
  readonly lockMakesDir: boolean[];
  readonly events: string[];
  failRecordWrites: boolean;
  /** Record removals fail with this errno name. */
  failRecordRemoves: string | undefined;
}

/** The state dir's records in memory, as the plugin's RecordStore reads and writes them on a host. */
export function fakeRecordStore(node: FakeRecordState, stateDir: string): RecordStore {
  const key = (containerId: string, ifname: string) => `${stateDir}:${containerId}_${ifname}`;
  const mine = () => [...node.records].filter(([name]) => name.startsWith(`${stateDir}:`));
  return {
    write: (record) => {
      if (node.failRecordWrites) throw new Error(`EACCES: permission denied, open '${stateDir}/attachments'`);
      node.records.set(key(record.containerId, record.ifname), { version: 1, ...record, time: new Date().toISOString() });
      node.events.push(`record ${record.ifname} ${record.state}`);
    },
    remove: ({ containerID, ifname }) => {
      if (node.failRecordRemoves)
        throw Object.assign(new Error(`${node.failRecordRemoves}: cannot unlink ${ifname}`), { code: node.failRecordRemoves });
      if (node.records.delete(key(containerID, ifname))) node.events.push(`remove record ${ifname}`);
    },
    list: () => mine().map(([, record]) => record),
    forContainer: (containerID) => mine().flatMap(([, record]) => (record.containerId === containerID ? [record] : [])),
    sweep: () => [],
    read: ({ containerID, ifname }) => node.records.get(key(containerID, ifname)),
    lock: async ({ containerID, ifname }, options) => {
      node.lockMakesDir.push(options?.createDir ?? true);
      // One holder per attachment, the next waiting for it: the flock of the state dir's lock files.
      const name = key(containerID, ifname);
      const held = node.locks.get(name) ?? Promise.resolve();
      let release!: () => void;
      const mine = held.then(() => new Promise<void>((resolve) => (release = resolve)));
      node.locks.set(name, mine);
      await held;
      return () => release();
    },
    collect: (valid) => {
      const keep = new Set(valid.map(({ containerID, ifname }) => key(containerID, ifname)));
      const stale = mine().filter(([name]) => !keep.has(name));
      for (const [name] of stale) node.records.delete(name);
      return stale.length;
    },
  };
}
