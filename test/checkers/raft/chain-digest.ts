// The digest chain of applied entries that the simulator's toy application keeps
// (test/sim/raft/app.ts) and the safety checkers recompute (safety.ts): two nodes with the same
// digest at the same index applied the same sequence, so State Machine Safety is one
// comparison, and chainDigest(0, e) fingerprints one entry for Log Matching.
import type { Entry } from '../../../src/raft/core/types.js';

const KIND_CODE = { normal: 1, noop: 2, conf: 3 } as const;

/** FNV-1a over the previous digest, the entry's position and its bytes */
export function chainDigest(prev: number, e: Entry): number {
  let h = 0x811c9dc5 ^ prev;
  const mix = (x: number): void => {
    h = Math.imul(h ^ (x & 0xff), 0x01000193);
    h = Math.imul(h ^ ((x >>> 8) & 0xff), 0x01000193);
    h = Math.imul(h ^ ((x >>> 16) & 0xff), 0x01000193);
    h = Math.imul(h ^ (x >>> 24), 0x01000193);
  };
  mix(e.index);
  mix(e.term);
  mix(KIND_CODE[e.kind]);
  for (const b of e.data) h = Math.imul(h ^ b, 0x01000193);
  return h >>> 0;
}
