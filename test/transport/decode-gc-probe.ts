// Run by decode-gc.test.ts in a child started with --expose-gc: the heap that 20,000
// decoded peer envelopes leave behind after two scavenges, per envelope, beside the same
// count of messages built the way wire-validate.ts built them before (a leading spread,
// then the type's fields). Prints one JSON line.
import { decodeEnvelope, encodeEnvelope } from '../../src/transport/codec.js';
import { bytesLeftAfterScavenges } from '../support/heap-probe.js';

const N = 20_000;

/** bytes per call still in the heap after two scavenges (nothing the calls made is kept),
 *  the function optimized first: the cost appears only then */
async function leftPerCall(fn: (i: number) => number): Promise<number> {
  let sink = 0;
  for (let i = 0; i < 5000; i++) sink += fn(i);
  const left = await bytesLeftAfterScavenges(() => {
    for (let i = 0; i < N; i++) sink += fn(i);
  });
  if (sink < 0) throw new Error('unreachable');
  return left / N;
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
// the decoder first, then the control (heap-probe.ts says why)
const decodeBytes = Math.round(await leftPerCall(decode));
const spreadFirstBytes = Math.round(await leftPerCall(spreadFirst));
process.stdout.write(`${JSON.stringify({ calls: N, decode: decodeBytes, spreadFirst: spreadFirstBytes })}\n`);
