// Run by decode-gc.test.ts in a child started with --expose-gc: the heap that 20,000
// decoded peer envelopes leave behind after two scavenges, per envelope, beside the same
// count of messages built the way wire-validate.ts built them before (a leading spread,
// then the type's fields). Prints one JSON line.
import { getHeapSpaceStatistics } from 'node:v8';
import { decodeEnvelope, encodeEnvelope } from '../../src/transport/codec.js';

type Gc = (o?: { type: 'minor' | 'major' }) => void;
const gc = (globalThis as { gc?: Gc }).gc;
if (gc === undefined) throw new Error('run with --expose-gc');

const N = 20_000;

function heapUsed(): number {
  let n = 0;
  for (const s of getHeapSpaceStatistics()) if (s.space_name === 'new_space' || s.space_name === 'old_space') n += s.space_used_size;
  return n;
}

/** bytes per call still in the heap after two scavenges (nothing the calls made is kept) */
function leftPerCall(fn: (i: number) => number): number {
  let sink = 0;
  for (let i = 0; i < 5000; i++) sink += fn(i); // optimized before measuring: the cost appears only then
  gc!();
  gc!({ type: 'minor' });
  const before = heapUsed();
  for (let i = 0; i < N; i++) sink += fn(i);
  gc!({ type: 'minor' });
  gc!({ type: 'minor' });
  if (sink < 0) throw new Error('unreachable');
  return (heapUsed() - before) / N;
}

const body = encodeEnvelope({
  cluster: 'c', from: 'n2', to: 'n1',
  messages: [
    { type: 'appendResp', from: 'n2', to: 'n1', term: 3, index: 1234, reject: false, hint: 0, hintTerm: 0 },
    { type: 'heartbeatResp', from: 'n2', to: 'n1', term: 3, ctx: 9 },
  ],
});
const opts = { cluster: 'c', self: 'n1', knownPeers: new Set(['n2', 'n3']), maxEntries: 1000, maxBytes: 1 << 20 };
const decode = (): number => {
  const r = decodeEnvelope(body, opts);
  if (!r.ok) throw new Error(`the probe's envelope does not decode: ${r.detail}`);
  return r.messages.length;
};
const spreadFirst = (i: number): number => {
  const h = { from: 'n2', to: 'n1', term: i };
  const m = { ...h, type: 'heartbeatResp', ctx: 9 };
  return m.ctx;
};
// the decoder first: a control that keeps what it makes can teach V8 to allocate straight
// into the old generation (allocation-site pretenuring), which a later trial would count
const min3 = (fn: (i: number) => number): number => Math.min(leftPerCall(fn), leftPerCall(fn), leftPerCall(fn));
const decodeBytes = Math.round(min3(decode));
const spreadFirstBytes = Math.round(min3(spreadFirst));
process.stdout.write(`${JSON.stringify({ calls: N, decode: decodeBytes, spreadFirst: spreadFirstBytes })}\n`);
