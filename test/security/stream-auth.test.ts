// Stream authentication under the cluster secret (docs/security.md "Streams"): the opening
// request is signed over an empty body, every frame carries a tag bound to the stream (its
// nonce) and to its position. Unit checks of PeerAuthenticator, then real transports wired
// by setupSecurity refusing tampered, replayed, reordered, dropped and spliced frames.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { STREAM_PATH, encodeStreamFrame } from '../../src/transport/stream-frames.js';
import { PeerAuthenticator, STREAM_TAG_BYTES } from '../../src/security/peer-auth.js';
import { hb, waitFor } from '../transport/helpers.js';
import { rawStream } from '../transport/stream-helpers.js';
import { encodeEnvelope } from '../../src/transport/codec.js';
import { rejected, startPeers, tempDir, type Peer } from './helpers.js';

const SECRET = Buffer.from('0123456789abcdef0123456789abcdef');
const EMPTY = new Uint8Array(0);
const bytes = (s: string): Uint8Array => new TextEncoder().encode(s);

describe('PeerAuthenticator stream tags', () => {
  const auth = (secret = SECRET) => new PeerAuthenticator({ secret });

  it('accepts the frames of a stream in order; tags are 16 bytes', () => {
    const a = auth();
    const open = a.sign('POST', STREAM_PATH, EMPTY);
    assert.deepEqual(a.verify('POST', STREAM_PATH, open, EMPTY), { ok: true });
    const tag = a.streamSender(open);
    const verify = a.streamReceiver(open)!;
    for (let i = 0; i < 100; i++) {
      const f = bytes(`frame ${i}`);
      const t = tag(f);
      assert.equal(t.length, STREAM_TAG_BYTES);
      assert.equal(verify(f, t), true, `frame ${i}`);
    }
  });

  it('refuses tampered, reordered, replayed, dropped-in-the-middle and spliced frames, and stays refused', () => {
    const a = auth();
    const open = a.sign('POST', STREAM_PATH, EMPTY);
    const tag = a.streamSender(open);
    const f = [0, 1, 2, 3].map((i) => bytes(`frame ${i}`));
    const t = f.map((x) => tag(x));
    const fresh = () => a.streamReceiver(open)!;

    const tampered = Uint8Array.from(f[0]!);
    tampered[0]! ^= 1;
    assert.equal(fresh()(tampered, t[0]!), false, 'tampered frame');
    assert.equal(fresh()(f[0]!, Uint8Array.from(t[0]!, (b, i) => (i === 0 ? b ^ 1 : b))), false, 'tampered tag');
    assert.equal(fresh()(f[0]!, t[0]!.subarray(0, 8)), false, 'truncated tag');
    assert.equal(fresh()(f[1]!, t[1]!), false, 'frame 1 first (reordered)');

    const v = fresh();
    assert.equal(v(f[0]!, t[0]!), true);
    assert.equal(v(f[0]!, t[0]!), false, 'frame 0 again (replayed)');
    assert.equal(v(f[1]!, t[1]!), false, 'after a refusal the stream stays refused');

    const w = fresh();
    assert.equal(w(f[0]!, t[0]!), true);
    assert.equal(w(f[2]!, t[2]!), false, 'frame 1 dropped');

    // a tag from another stream (another nonce) does not fit, even at the same position
    const other = a.sign('POST', STREAM_PATH, EMPTY);
    const otherTag = a.streamSender(other)(f[0]!);
    assert.equal(fresh()(f[0]!, otherTag), false, 'spliced from another stream');
    // nor one made with another secret
    const b = auth(Buffer.from('another-secret-of-32-bytes-000000'));
    assert.equal(fresh()(f[0]!, b.streamSender(open)(f[0]!)), false, 'another secret');
  });

  it('refuses opening headers without a valid nonce', () => {
    const a = auth();
    assert.equal(a.streamReceiver({}), null);
    assert.equal(a.streamReceiver({ 'x-raftlock-peer-nonce': 'short' }), null);
    assert.throws(() => a.streamSender({}), /nonce/);
  });
});

describe('streams between real transports with a cluster secret', () => {
  const tmp = tempDir('stream-secret');
  const peers: Peer[] = [];
  after(async () => {
    await Promise.all(peers.map((p) => p.t.close()));
    tmp.cleanup();
  });

  it('deliver over an authenticated stream; refuse tampered, replayed, reordered, dropped and spliced frames', async () => {
    writeFileSync(join(tmp.dir, 'cluster.secret'), `${SECRET.toString('hex')}\n`, { mode: 0o600 });
    peers.push(...(await startPeers(tmp.dir, ['n1', 'n2'], 'http', () => ({ cluster_secret_file: 'cluster.secret' }), undefined, { streamIdleMs: 100 })));
    for (const p of peers) assert.ok(p.security.transport.streamAuth, 'a cluster secret turns stream auth on');
    const urls = new Map(peers.map((p) => [p.id, `http://127.0.0.1:${p.t.address().port}`]));
    const [n1, n2] = peers as [Peer, Peer];

    // the transports themselves: a tagged stream, closed when idle with a 204
    n1.t.send([hb('n1', 'n2', 1), hb('n1', 'n2', 2)]);
    n1.t.send([hb('n1', 'n2', 3)]);
    await waitFor(() => n2.inbox.length === 3 && n1.t.stats().streams.ok === 1, 'n1 → n2 over an authenticated stream');
    assert.deepEqual(n2.t.stats().rejected, {});

    // by hand: a signer holding the secret (the file's text, trimmed, as bytes)
    const signer = new PeerAuthenticator({ secret: Buffer.from(SECRET.toString('hex')) });
    const url = urls.get('n2')!;
    const env = (ctx: number): Uint8Array => encodeEnvelope({ cluster: 'test', from: 'n1', to: 'n2', messages: [hb('n1', 'n2', ctx)] });
    const stream = (ctxs: number[]) => {
      const open = signer.sign('POST', STREAM_PATH, EMPTY);
      const tag = signer.streamSender(open);
      const frames = ctxs.map((c) => env(c));
      return { open, frames, tags: frames.map((f) => tag(f)) };
    };
    const wire = (f: Uint8Array, t: Uint8Array): Buffer => encodeStreamFrame(f, t);

    const good = stream([10, 11]);
    const goodWire = [wire(good.frames[0]!, good.tags[0]!), wire(good.frames[1]!, good.tags[1]!)];
    assert.equal(await rawStream(url, goodWire, good.open), 204, 'a correct stream');
    assert.equal(n2.inbox.length, 5);

    const unauth = () => n2.t.stats().rejected.unauthenticated ?? 0;
    let refused = unauth();
    const expectRefused = async (what: string, pieces: Uint8Array[], headers: Record<string, string>, delivered: number) => {
      const before = n2.inbox.length;
      assert.equal(await rawStream(url, pieces, headers), 401, what);
      assert.equal(n2.inbox.length, before + delivered, `${what}: frames before the bad one only`);
      assert.equal(unauth(), ++refused, `${what}: counted`);
    };

    await expectRefused('the same stream replayed (open signature and frames)', goodWire, good.open, 0);
    assert.equal(await rejected(n2.metrics, 'secret_replay'), 1);

    const s1 = stream([20, 21, 22]);
    const tampered = Uint8Array.from(s1.frames[1]!);
    tampered[tampered.length - 1]! ^= 1; // the heartbeat's ctx: still a valid envelope
    await expectRefused('a tampered frame', [wire(s1.frames[0]!, s1.tags[0]!), wire(tampered, s1.tags[1]!)], s1.open, 1);
    assert.equal(await rejected(n2.metrics, 'secret_bad_frame_tag'), 1);

    const s2 = stream([30, 31]);
    await expectRefused('reordered frames', [wire(s2.frames[1]!, s2.tags[1]!), wire(s2.frames[0]!, s2.tags[0]!)], s2.open, 0);

    const s3 = stream([40, 41, 42]);
    await expectRefused('a frame dropped in the middle', [wire(s3.frames[0]!, s3.tags[0]!), wire(s3.frames[2]!, s3.tags[2]!)], s3.open, 1);

    const s4 = stream([50]);
    const s5 = stream([51]);
    await expectRefused('a frame and tag from another stream', [wire(s5.frames[0]!, s5.tags[0]!)], s4.open, 0);

    const s6 = stream([60, 61]);
    // the receiver reads the first 16 bytes after a frame as its tag
    await expectRefused('frames without tags', s6.frames.map((f) => encodeStreamFrame(f)), s6.open, 0);

    await expectRefused('no signature on the opening request', goodWire, {}, 0);
    assert.equal(await rejected(n2.metrics, 'secret_missing'), 1);

    // and the transports still talk afterwards
    n1.t.send([hb('n1', 'n2', 99)]);
    await waitFor(() => n2.inbox.at(-1)?.type === 'heartbeat' && (n2.inbox.at(-1) as { ctx: number }).ctx === 99, 'delivery afterwards');
  });
});
