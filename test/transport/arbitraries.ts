// fast-check generators for valid Raft messages (as the core would send them) and the
// seed convention shared by the transport's property tests.
import fc from 'fast-check';
import type { Entry, EntryKind, Message, Snapshot } from '../../src/raft/core/types.js';
import { testSeed } from '../support/seed.js';

/** FC_SEED=<n> replays a run; otherwise a fresh seed is drawn and printed (test/support/seed.ts) */
export function seedFor(name: string): number {
  return testSeed('FC_SEED', { what: name });
}

const MAX = 2 ** 52;
/** mostly small numbers, sometimes the extremes */
const num = (max = MAX): fc.Arbitrary<number> =>
  fc.oneof({ weight: 4, arbitrary: fc.integer({ min: 0, max: Math.min(max, 1000) }) }, { weight: 1, arbitrary: fc.integer({ min: 0, max }) }, { weight: 1, arbitrary: fc.constant(max) });
const bytes = fc.uint8Array({ maxLength: 64 });
const nodeId = fc.constantFrom('n1', 'n2', 'n3', 'n4', 'node-with-a-longer-name');

function entriesAfter(prevIndex: number, prevTerm: number, term: number): fc.Arbitrary<Entry[]> {
  const room = Math.min(8, MAX - prevIndex);
  return fc
    .array(fc.tuple(fc.integer({ min: prevTerm, max: term }), fc.constantFrom<EntryKind>('normal', 'noop', 'conf'), bytes), { maxLength: room })
    .map((raw) => {
      const terms = raw.map((r) => r[0]).sort((a, b) => a - b);
      return raw.map((r, i) => ({ index: prevIndex + 1 + i, term: terms[i]!, kind: r[1], data: r[2] }));
    });
}

/** a snapshot that a leader in `term` (>= 1) may send: 0 < meta.term <= term */
export const snapshotArb = (term: number): fc.Arbitrary<Snapshot> =>
  fc
    .tuple(fc.integer({ min: 1, max: MAX }), fc.integer({ min: 1, max: term }), fc.uniqueArray(nodeId, { maxLength: 5 }), fc.nat({ max: 5 }), fc.uint8Array({ maxLength: 300 }))
    .map(([index, metaTerm, ids, split, data]) => ({ meta: { index, term: metaTerm, conf: { voters: ids.slice(0, split), learners: ids.slice(split) } }, data }));

/** any valid message from `from` to `to` */
export function messageArb(from = 'n2', to = 'n1'): fc.Arbitrary<Message> {
  const h = { from, to };
  return num().chain((term): fc.Arbitrary<Message> => {
    const lower = fc.integer({ min: 0, max: term });
    return fc.oneof(
      fc.tuple(fc.constantFrom('vote' as const, 'preVote' as const), num(), lower).map(([type, lastIndex, lastTerm]) => ({ ...h, term, type, lastIndex, lastTerm })),
      fc.tuple(fc.constantFrom('voteResp' as const, 'preVoteResp' as const), fc.boolean()).map(([type, reject]) => ({ ...h, term, type, reject })),
      fc.tuple(num(MAX - 8), lower, num()).chain(([prevIndex, pt, commit]) => {
        const prevTerm = prevIndex === 0 ? 0 : pt;
        return entriesAfter(prevIndex, prevTerm, term).map((entries): Message => ({ ...h, term, type: 'append', prevIndex, prevTerm, entries, commit }));
      }),
      fc.tuple(num(), fc.boolean(), num(), num()).map(([index, reject, hint, hintTerm]): Message => ({ ...h, term, type: 'appendResp', index, reject, hint, hintTerm })),
      fc.tuple(num(), num()).map(([commit, ctx]): Message => ({ ...h, term, type: 'heartbeat', commit, ctx })),
      num().map((ctx): Message => ({ ...h, term, type: 'heartbeatResp', ctx })),
      (term === 0 ? fc.constant<Snapshot>({ meta: { index: 0, term: 0, conf: { voters: [], learners: [] } }, data: new Uint8Array() }) : snapshotArb(term)).map((snapshot): Message => ({ ...h, term, type: 'snapshot', snapshot })),
      fc.constant<Message>({ ...h, term, type: 'timeoutNow' }),
    );
  });
}
