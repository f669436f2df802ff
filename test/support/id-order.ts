// The simulators' list of running nodes, in the order their ids were created: both
// simulators (test/sim/raft, test/sim/lock) iterate it several times per tick and cache it
// until a node starts, stops or joins, so the order, and with it every schedule, stays
// what the seed makes it.

/** the nodes of `ids` present in `nodes`, in the order of `ids` */
export function inIdOrder<T>(ids: readonly string[], nodes: ReadonlyMap<string, T>): T[] {
  const out: T[] = [];
  for (const id of ids) {
    const n = nodes.get(id);
    if (n !== undefined) out.push(n);
  }
  return out;
}
