// Lock sets in the per-name checkers (docs/jepsen-lite.md "The model"): an acquire-all or
// a release-all is projected onto each of its names as the per-name operation it is
// there, so lease safety, token order, orphan grants and durability judge the transfer
// workload's account locks as any lock. (Linearizability takes the sets as they are: the
// names sets link are one partition, linearizability.ts.) The projection is sound, never
// stricter than the set:
// - acquire-all ok: every name was granted, each with its token → an ok acquire per name;
// - acquire-all info: granted all together or nothing → an info acquire per name (the
//   projection loses "all together"; checkLockSets keeps it where answers show it);
// - acquire-all fail: nothing changed anywhere → left out (a refused set does not say that
//   each name was held, only that one was); but session_not_found, which may follow a
//   grant (then the expiry), becomes a session_not_found acquire per name, which the
//   linearizability partitioner treats as unknown up to the session's death;
// - release-all ok: the names it lists were released → an ok release each; the others it
//   did not hold → a not_holder release each;
// - release-all info → an info release per name; fail (nothing applied) → left out.
// What the projection cannot see — a set held partly — checkLockSets looks for in the
// answers: every acquire-all answered ok must list each name once with its own token.
import type { Op } from './history.js';

export function projectLockSets(ops: readonly Op[]): Op[] {
  const out: Op[] = [];
  for (const op of ops) {
    if (op.f !== 'acquire-all' && op.f !== 'release-all') {
      out.push(op);
      continue;
    }
    const names = op.input.names ?? [];
    // a refusal changed nothing — except session_not_found, which an acquire can get after
    // it granted (the grant, the session's expiry, then the answer): kept, per name, for
    // the partitioner to treat as it treats an acquire's (indeterminate until the death)
    if (op.type === 'fail' && !(op.f === 'acquire-all' && op.output.code === 'session_not_found')) continue;
    for (const name of names) {
      const base = { ...op, id: `${op.id}/${name}` };
      if (op.f === 'acquire-all') {
        const input = { ...op.input, lock: name };
        delete input.names;
        const g = op.output.set?.find((x) => x.name === name);
        const output = op.type === 'ok' ? { ...op.output, token: g?.token ?? -1 } : { ...op.output };
        delete output.set;
        out.push({ ...base, f: 'acquire', input, output });
      } else {
        const input = { lock: name, ...(op.input.session !== undefined ? { session: op.input.session } : {}) };
        if (op.type === 'info') out.push({ ...base, f: 'release', input, output: { ...op.output } });
        else if ((op.output.released ?? []).includes(name)) out.push({ ...base, f: 'release', input, output: {} });
        else out.push({ ...base, f: 'release', type: 'fail', input, output: { code: 'not_holder' } });
      }
    }
  }
  return out;
}

/** every acquire-all answered ok granted each of its names once, with distinct tokens */
export function checkLockSets(ops: readonly Op[]): string[] {
  const v: string[] = [];
  for (const op of ops) {
    if (op.f !== 'acquire-all' || op.type !== 'ok') continue;
    const names = op.input.names ?? [];
    const set = op.output.set ?? [];
    const got = set.map((g) => g.name);
    const tokens = set.map((g) => g.token);
    if (got.length !== names.length || names.some((n) => !got.includes(n))) v.push(`lock sets: ${op.id} acquire-all of ${names.join(', ')} was answered ok with grants of ${got.join(', ') || 'nothing'} (a set held partly)`);
    else if (tokens.some((t) => !Number.isSafeInteger(t) || t < 1)) v.push(`lock sets: ${op.id} acquire-all of ${names.join(', ')} was answered ok without a fencing token for every name (${JSON.stringify(set)})`);
    else if (new Set(tokens).size !== tokens.length) v.push(`lock sets: ${op.id} acquire-all of ${names.join(', ')} was answered ok with one token for two names (${JSON.stringify(set)})`);
  }
  return v;
}
