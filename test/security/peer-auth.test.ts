// Peer authentication (docs/security.md "Cluster secret"): the HMAC scheme on its own, then
// real HttpTransports wired by setupSecurity — with a cluster secret, and with mutual TLS —
// where an intruder (wrong/missing secret, certificate from another CA, no certificate) is
// refused before any message reaches the receiver's handler, and every refusal is counted.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { MESSAGES_PATH } from '../../src/transport/peer-server.js';
import { encodeEnvelope } from '../../src/transport/codec.js';
import { PeerAuthenticator, PEER_NONCE_HEADER, PEER_SIGNATURE_HEADER, PEER_TIME_HEADER } from '../../src/security/peer-auth.js';
import { hb, waitFor } from '../transport/helpers.js';
import { haveOpenssl, makeCerts, rejected, startPeers, tempDir, type Peer } from './helpers.js';

const SECRET = Buffer.from('0123456789abcdef0123456789abcdef');

describe('PeerAuthenticator', () => {
  let now = 1_800_000_000_000;
  const auth = (secret = SECRET, o: { maxNonces?: number } = {}) => new PeerAuthenticator({ secret, nowMs: () => now, windowMs: 30_000, ...o });
  const body = new TextEncoder().encode('the exact body bytes');
  const PATH = '/raft/v1/messages';

  it('accepts its own signature once; a replay inside the window is refused', () => {
    const a = auth();
    const h = a.sign('POST', PATH, body);
    assert.deepEqual(a.verify('POST', PATH, h, body), { ok: true });
    assert.deepEqual(a.verify('POST', PATH, h, body), { ok: false, reason: 'replay' });
  });

  it('refuses a changed body, path, method, time or nonce, and another secret', () => {
    const a = auth();
    const h = a.sign('POST', PATH, body);
    assert.deepEqual(a.verify('POST', PATH, h, new TextEncoder().encode('the exact body bytez')), { ok: false, reason: 'bad_signature' });
    assert.deepEqual(a.verify('POST', '/raft/v1/snapshot', h, body), { ok: false, reason: 'bad_signature' });
    assert.deepEqual(a.verify('PUT', PATH, h, body), { ok: false, reason: 'bad_signature' });
    assert.deepEqual(a.verify('POST', PATH, { ...h, [PEER_TIME_HEADER]: String(now - 1) }, body), { ok: false, reason: 'bad_signature' });
    assert.deepEqual(a.verify('POST', PATH, { ...h, [PEER_NONCE_HEADER]: 'A'.repeat(22) }, body), { ok: false, reason: 'bad_signature' });
    const other = auth(Buffer.from('another-secret-of-32-bytes-000000'));
    assert.deepEqual(other.verify('POST', PATH, a.sign('POST', PATH, body), body), { ok: false, reason: 'bad_signature' });
  });

  it('refuses missing, malformed and stale headers before looking at the body', () => {
    const a = auth();
    const h = a.sign('POST', PATH, body);
    assert.deepEqual(a.precheck({}), { ok: false, reason: 'missing' });
    assert.deepEqual(a.precheck({ ...h, [PEER_SIGNATURE_HEADER]: undefined }), { ok: false, reason: 'missing' });
    assert.deepEqual(a.precheck({ ...h, [PEER_TIME_HEADER]: '12x' }), { ok: false, reason: 'malformed' });
    assert.deepEqual(a.precheck({ ...h, [PEER_NONCE_HEADER]: 'short' }), { ok: false, reason: 'malformed' });
    assert.deepEqual(a.precheck({ ...h, [PEER_SIGNATURE_HEADER]: 'v2=abc' }), { ok: false, reason: 'malformed' });
    assert.deepEqual(a.precheck({ ...h, [PEER_TIME_HEADER]: [String(now), String(now)] }), { ok: false, reason: 'missing' });
    now += 30_001;
    assert.deepEqual(a.verify('POST', PATH, h, body), { ok: false, reason: 'stale' });
    const future = a.sign('POST', PATH, body);
    now -= 60_002; // the receiver's clock behind by more than the window
    assert.deepEqual(a.verify('POST', PATH, future, body), { ok: false, reason: 'stale' });
    now += 30_001;
  });

  it('forgets nonces once their window has passed; a full cache fails closed', () => {
    const a = auth(SECRET, { maxNonces: 3 });
    for (let i = 0; i < 3; i++) assert.equal(a.verify('POST', PATH, a.sign('POST', PATH, body), body).ok, true);
    assert.deepEqual(a.verify('POST', PATH, a.sign('POST', PATH, body), body), { ok: false, reason: 'nonce_cache_full' });
    now += 30_001;
    assert.equal(a.verify('POST', PATH, a.sign('POST', PATH, body), body).ok, true, 'expired nonces were pruned');
    assert.equal(a.rememberedNonces, 1);
  });

  it('refuses short secrets', () => {
    assert.throws(() => auth(Buffer.from('short')), /at least 16 bytes/);
  });
});

// ---- real transports ----

describe('cluster secret between real transports', () => {
  const tmp = tempDir('peer-secret');
  const peers: Peer[] = [];
  after(async () => {
    await Promise.all(peers.map((p) => p.t.close()));
    tmp.cleanup();
  });

  it('delivers between holders of the secret; refuses and counts wrong, missing and replayed signatures', async () => {
    writeFileSync(join(tmp.dir, 'good.secret'), `${SECRET.toString('hex')}\n`, { mode: 0o600 });
    writeFileSync(join(tmp.dir, 'bad.secret'), 'a-different-secret-of-enough-bytes\n', { mode: 0o600 });
    // n1, n2 read the file; n3 (the intruder) has another secret via the environment
    peers.push(...(await startPeers(tmp.dir, ['n1', 'n2', 'n3'], 'http', (id) => (id === 'n3' ? {} : { cluster_secret_file: 'good.secret' }), (id) => (id === 'n3' ? { RAFTLOCK_CLUSTER_SECRET: 'a-different-secret-of-enough-bytes' } : {}))));
    const [n1, n2, n3] = peers as [Peer, Peer, Peer];
    n1.t.send([hb('n1', 'n2', 1)]);
    await waitFor(() => n2.inbox.length === 1, 'n1 → n2 delivery');

    n3.t.send([hb('n3', 'n2', 1), hb('n3', 'n2', 2)]);
    await waitFor(() => n2.t.stats().rejected.unauthenticated !== undefined, 'the intruder refused');
    assert.equal(n2.inbox.length, 1, 'nothing from the intruder reached the handler');
    assert.ok((await rejected(n2.metrics, 'secret_bad_signature')) >= 1);

    const url = `http://127.0.0.1:${n2.t.address().port}${MESSAGES_PATH}`;
    const body = encodeEnvelope({ cluster: 'test', from: 'n1', to: 'n2', messages: [hb('n1', 'n2', 3)] });
    const noHeaders = await request(url, { method: 'POST', body, headers: { 'content-type': 'application/vnd.raftlock.peer+msgpack' } });
    assert.equal(noHeaders.statusCode, 401);
    await noHeaders.body.dump();
    assert.equal(await rejected(n2.metrics, 'secret_missing'), 1);

    // a correctly signed request, sent twice: the copy is a replay
    // the secret is the file's text (trimmed), as bytes
    const signer = new PeerAuthenticator({ secret: Buffer.from(SECRET.toString('hex')) });
    const headers = { 'content-type': 'application/vnd.raftlock.peer+msgpack', ...signer.sign('POST', MESSAGES_PATH, body) };
    const first = await request(url, { method: 'POST', body, headers });
    assert.equal(first.statusCode, 204);
    await first.body.dump();
    const replay = await request(url, { method: 'POST', body, headers });
    assert.equal(replay.statusCode, 401);
    await replay.body.dump();
    assert.equal(await rejected(n2.metrics, 'secret_replay'), 1);
    assert.equal(n2.inbox.length, 2);
  });
});

describe('mutual TLS between real transports', { skip: haveOpenssl() ? false : 'openssl not installed' }, () => {
  const tmp = tempDir('peer-mtls');
  const peers: Peer[] = [];
  after(async () => {
    await Promise.all(peers.map((p) => p.t.close()));
    tmp.cleanup();
  });

  it('refuses and counts a peer whose certificate is from another CA, or who has none; reloads certificates', async () => {
    const good = join(tmp.dir, 'good');
    const evil = join(tmp.dir, 'evil');
    const next = join(tmp.dir, 'next');
    makeCerts(good, ['n1', 'n2', 'n3']);
    makeCerts(evil, ['n3']);
    makeCerts(next, ['n2']);
    // n3 has a certificate from another CA but trusts the cluster's CA: it can reach n2
    mkdirSync(join(tmp.dir, 'n3'));
    copyFileSync(join(good, 'ca.crt'), join(tmp.dir, 'n3', 'ca.crt'));
    const peerTls = (id: string) => (id === 'n3'
      ? { peer_tls: { cert_file: join(evil, 'n3-peer.crt'), key_file: join(evil, 'n3-peer.key'), ca_file: join(tmp.dir, 'n3', 'ca.crt') } }
      : { peer_tls: { cert_file: join(good, '{node}-peer.crt'), key_file: join(good, '{node}-peer.key'), ca_file: join(good, 'ca.crt') } });
    const started = await startPeers(tmp.dir, ['n1', 'n2', 'n3'], 'https', peerTls);
    peers.push(...started);
    const [n1, n2, n3] = started as [Peer, Peer, Peer];

    n1.t.send([hb('n1', 'n2', 1)]);
    await waitFor(() => n2.inbox.length === 1, 'n1 → n2 over mutual TLS');
    n3.t.send([hb('n3', 'n2', 1)]);
    await waitFor(() => n2.t.stats().rejected.unauthenticated !== undefined, 'the foreign certificate refused');
    assert.equal(await rejected(n2.metrics, 'tls_untrusted_certificate'), 1);
    assert.equal(n2.inbox.length, 1);

    const port = n2.t.address().port;
    const url = `https://127.0.0.1:${port}${MESSAGES_PATH}`;
    const body = encodeEnvelope({ cluster: 'test', from: 'n1', to: 'n2', messages: [hb('n1', 'n2', 2)] });
    const noCert = new Agent({ connect: { ca: readFileSync(join(good, 'ca.crt')) } });
    const r = await request(url, { method: 'POST', body, dispatcher: noCert });
    assert.equal(r.statusCode, 401);
    await r.body.dump();
    await noCert.close();
    assert.equal(await rejected(n2.metrics, 'tls_no_certificate'), 1);
    assert.equal(n2.inbox.length, 1);

    // SIGHUP-style reload: n2's peer server now presents a certificate from the `next` CA
    n2.t.setServerTls({ cert: readFileSync(join(next, 'n2-peer.crt')), key: readFileSync(join(next, 'n2-peer.key')), ca: readFileSync(join(next, 'ca.crt')), requestCert: true, rejectUnauthorized: false });
    const trustsNext = new Agent({ connect: { ca: readFileSync(join(next, 'ca.crt')), cert: readFileSync(join(next, 'client.crt')), key: readFileSync(join(next, 'client.key')) } });
    const r2 = await request(url, { method: 'POST', body, dispatcher: trustsNext, headers: { 'content-type': 'application/vnd.raftlock.peer+msgpack' } });
    assert.equal(r2.statusCode, 204, 'the new certificate and CA are in force for new connections');
    await r2.body.dump();
    await trustsNext.close();
    const trustsOld = new Agent({ connect: { ca: readFileSync(join(good, 'ca.crt')), cert: readFileSync(join(good, 'n1-peer.crt')), key: readFileSync(join(good, 'n1-peer.key')) } });
    await assert.rejects(request(url, { method: 'POST', body, dispatcher: trustsOld }), /certificate|self.signed|verify/i);
    await trustsOld.close();
  });
});
