// A real 3-process cluster with everything on (docs/security.md "Quick start"): https API,
// mutual-TLS peers, a cluster secret, API tokens and per-token limits, certificates from
// `raftlock certs`. It serves through any node (followers relay to the leader over TLS),
// refuses what it must (401/403/429 in the contract's shape, other tokens' sessions,
// foreign peer certificates, unsigned peer requests), counts the refusals, and reloads its
// certificates on SIGHUP without a restart.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import tls from 'node:tls';
import { Agent, request } from 'undici';
import { ClusterHarness, eventually } from '../support/cluster-harness.js';
import { assertError } from '../cluster/helpers.js';
import { MESSAGES_PATH } from '../../src/transport/peer-server.js';
import { bearer, haveOpenssl, makeCerts, writeTokens } from './helpers.js';

const CERTS = 'certs';

function servedSerial(url: string, ca: Buffer): Promise<string> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const s = tls.connect({ host: u.hostname, port: Number(u.port), ca, servername: undefined }, () => {
      const serial = s.getPeerCertificate().serialNumber;
      s.end();
      resolve(serial);
    });
    s.on('error', reject);
  });
}

describe('TLS cluster: https API, mutual-TLS peers, cluster secret, tokens', { skip: haveOpenssl() ? false : 'openssl not installed' }, () => {
  let h: ClusterHarness;
  let ca: Buffer;
  let leader: string;
  let follower: string;

  before(async () => {
    h = await ClusterHarness.create({
      apiScheme: 'https',
      peerScheme: 'https',
      extraConfig: (dir) => {
        makeCerts(join(dir, CERTS), ['n1', 'n2', 'n3']);
        return {
          tls: { cert_file: `${CERTS}/{node}.crt`, key_file: `${CERTS}/{node}.key`, ca_file: `${CERTS}/ca.crt` },
          peer_tls: { cert_file: `${CERTS}/{node}-peer.crt`, key_file: `${CERTS}/{node}-peer.key`, ca_file: `${CERTS}/ca.crt` },
          cluster_secret_file: `${CERTS}/cluster.secret`,
          auth: { tokens_file: writeTokens(dir) },
          limits: { max_sessions_per_token: 3 },
        };
      },
      clientTls: (dir) => ({ ca: readFileSync(join(dir, CERTS, 'ca.crt')) }),
      headers: bearer('ops'),
    });
    ca = readFileSync(join(h.dir, CERTS, 'ca.crt'));
    h.startAll();
    leader = await h.waitForLeader(20_000);
    follower = h.nodes.map((n) => n.id).find((id) => id !== leader)!;
  });
  after(async () => {
    await h?.close();
  });

  it('serves over https through a follower (relayed to the leader over TLS)', async () => {
    const r = await h.request(follower, 'POST', '/v1/locks/billing/job/acquire', { ttl_ms: 5000 }, bearer('billing'));
    assert.equal(r.status, 200, r.text);
    assert.ok(r.body.fencing_token > 0);
    const rel = await h.request(follower, 'POST', '/v1/locks/billing/job/release', { session_id: r.body.session_id }, bearer('billing'));
    assert.equal(rel.status, 200, rel.text);
    assert.equal((await h.request(follower, 'GET', '/healthz', undefined, { authorization: '' })).status, 200);
    assertError(await h.request(follower, 'GET', '/v1/cluster', undefined, { authorization: '' }), 401, 'unauthenticated');
    assertError(await h.request(follower, 'POST', '/v1/locks/payroll/x/acquire', {}, bearer('billing')), 403, 'permission_denied');
  });

  it('another token cannot release, renew, keep alive, close or reuse a session it did not open; admin can', async () => {
    const open = await h.request(follower, 'POST', '/v1/sessions', { ttl_ms: 10_000 }, bearer('billing'));
    assert.equal(open.status, 201, open.text);
    const sid = open.body.session_id as string;
    assert.match(sid, /^[0-9a-f]{32}$/, '128 random bits');
    const acq = await h.request(leader, 'POST', '/v1/locks/billing/owned/acquire', { session_id: sid }, bearer('billing'));
    assert.equal(acq.status, 200, acq.text);

    for (const via of [leader, follower]) {
      const who = bearer('billing2');
      assertError(await h.request(via, 'POST', '/v1/locks/billing/owned/release', { session_id: sid }, who), 403, 'permission_denied', `release via ${via}`);
      assertError(await h.request(via, 'POST', '/v1/locks/billing/owned/renew', { session_id: sid }, who), 403, 'permission_denied', `renew via ${via}`);
      assertError(await h.request(via, 'POST', `/v1/sessions/${sid}/keepalive`, undefined, who), 403, 'permission_denied', `keepalive via ${via}`);
      assertError(await h.request(via, 'DELETE', `/v1/sessions/${sid}`, undefined, who), 403, 'permission_denied', `close via ${via}`);
      assertError(await h.request(via, 'POST', '/v1/locks/billing/other/acquire', { session_id: sid }, who), 403, 'permission_denied', `acquire via ${via}`);
    }
    const still = await h.request(leader, 'GET', '/v1/locks/billing/owned', undefined, bearer('reader'));
    assert.equal(still.body.holder?.session_id, sid, 'nothing changed');
    assert.equal((await h.request(leader, 'POST', '/v1/locks/billing/owned/renew', { session_id: sid }, bearer('billing'))).status, 200, 'the owner still can');
    // admin on billing/ may release it; closing the session needs admin on everything
    assert.equal((await h.request(follower, 'POST', '/v1/locks/billing/owned/release', { session_id: sid }, bearer('billingAdmin'))).status, 200);
    assertError(await h.request(follower, 'DELETE', `/v1/sessions/${sid}`, undefined, bearer('billingAdmin')), 403, 'permission_denied');
    assert.equal((await h.request(follower, 'DELETE', `/v1/sessions/${sid}`, undefined, bearer('ops'))).status, 200);
  });

  it('max_sessions_per_token: the 4th session of a token gets 429 with Retry-After; other tokens and the node are fine', async () => {
    const opened: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await h.request(follower, 'POST', '/v1/sessions', {}, bearer('billing2'));
      assert.equal(r.status, 201, r.text);
      opened.push(r.body.session_id);
    }
    const r4 = await h.request(follower, 'POST', '/v1/sessions', {}, bearer('billing2'));
    assertError(r4, 429, 'too_many_requests');
    assert.match(r4.body.error.message, /max_sessions_per_token/);
    assertError(await h.request(leader, 'POST', '/v1/locks/billing/z/acquire', {}, bearer('billing2')), 429, 'too_many_requests');
    assert.equal((await h.request(follower, 'POST', '/v1/sessions', {}, bearer('billing'))).status, 201, 'another token has its own budget');
    assert.equal((await h.request(follower, 'GET', '/readyz')).status, 200);
    assert.equal((await h.request(leader, 'DELETE', `/v1/sessions/${opened[0]}`, undefined, bearer('billing2'))).status, 200);
    assert.equal((await h.request(follower, 'POST', '/v1/sessions', {}, bearer('billing2'))).status, 201, 'a closed session frees a slot');
  });

  it('the peer port refuses a certificate from another CA, and unsigned requests with a good certificate; both counted', async () => {
    const evil = join(h.dir, 'evil');
    makeCerts(evil, ['n9']);
    const peerUrl = `${h.node(follower).peer}${MESSAGES_PATH}`;
    const foreign = new Agent({ connect: { ca, cert: readFileSync(join(evil, 'n9-peer.crt')), key: readFileSync(join(evil, 'n9-peer.key')) } });
    const good = new Agent({ connect: { ca, cert: readFileSync(join(h.dir, CERTS, 'client.crt')), key: readFileSync(join(h.dir, CERTS, 'client.key')) } });
    try {
      const r1 = await request(peerUrl, { method: 'POST', body: 'x', dispatcher: foreign, headers: { 'content-type': 'application/vnd.raftlock.peer+msgpack' } });
      assert.equal(r1.statusCode, 401);
      await r1.body.dump();
      const r2 = await request(peerUrl, { method: 'POST', body: 'x', dispatcher: good, headers: { 'content-type': 'application/vnd.raftlock.peer+msgpack' } });
      assert.equal(r2.statusCode, 401, 'a CA-signed certificate alone is not enough when a cluster secret is set');
      await r2.body.dump();
    } finally {
      await foreign.close();
      await good.close();
    }
    const m = await h.request(follower, 'GET', '/metrics');
    assert.match(m.text, /raftlock_peer_auth_rejected_total\{reason="tls_untrusted_certificate"\} 1/);
    assert.match(m.text, /raftlock_peer_auth_rejected_total\{reason="secret_missing"\} 1/);
    // and the cluster is unaffected
    assert.equal((await h.request(follower, 'POST', '/v1/locks/billing/after/acquire', {}, bearer('billing'))).status, 200);
  });

  it('SIGHUP reloads the certificates (same CA, new leaf) without a restart; a bad file keeps the old one', async () => {
    const node = h.node(follower);
    const pid = node.proc?.pid;
    const before = await servedSerial(node.api, ca);
    makeCerts(join(h.dir, CERTS), ['n1', 'n2', 'n3']); // reuses ca.key: new serials, same CA
    h.signal(follower, 'SIGHUP');
    await eventually(async () => (await servedSerial(node.api, ca)) !== before, 10_000, 'the new API certificate');
    await eventually(async () => /"reloaded":\["tls","peer_tls","tokens","cluster_secret"\]/.test(h.logText(follower)), 10_000, 'the reload log line');
    assert.equal(node.proc?.pid, pid, 'same process');
    // a broken key file: the reload of that block fails, the node keeps serving with the old material
    const served = await servedSerial(node.api, ca);
    writeFileSync(join(h.dir, CERTS, `${follower}.key`), 'not a key');
    h.signal(follower, 'SIGHUP');
    await eventually(async () => /reload failed; the previous material stays in force/.test(h.logText(follower)), 10_000, 'the failed reload logged');
    assert.equal(await servedSerial(node.api, ca), served);
    const r = await h.request(follower, 'POST', '/v1/locks/billing/reloaded/acquire', {}, bearer('ops'));
    assert.equal(r.status, 200, r.text);
  });
});
