// The peer port with mutual TLS (docs/security.md "Peer authentication"): a caller with a
// certificate from another CA, or with none, gets 401 on EVERY path and method — the Raft
// routes, unknown paths, `/` — never a 404/405 that would tell it what the port serves.
// Each refusal is counted in raftlock_peer_auth_rejected_total, and nothing reaches Raft.
// A member's certificate still gets the ordinary routing answers (404 for an unknown path).
// Also with a RESUMED TLS session: Node reports such a socket as authorized even when the
// first handshake had no certificate, which once let a certificate-less caller through.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import tls from 'node:tls';
import { Agent, request } from 'undici';
import { MESSAGES_PATH, SNAPSHOT_PATH } from '../../src/transport/peer-server.js';
import { STREAM_PATH } from '../../src/transport/stream-frames.js';
import { haveOpenssl, makeCerts, rejected, startPeers, tempDir, type Peer } from './helpers.js';

const PATHS = ['/', '/raft', '/raft/', MESSAGES_PATH, SNAPSHOT_PATH, STREAM_PATH, '/raft/v1/nope', '/metrics', '/v1/cluster', `${MESSAGES_PATH}?x=1`];
const METHODS = ['GET', 'POST', 'PUT', 'DELETE'] as const;

describe('peer port with mutual TLS refuses non-members on every path', { skip: haveOpenssl() ? false : 'openssl not installed' }, () => {
  const tmp = tempDir('peer-refusal');
  let peers: Peer[] = [];
  const agents: Agent[] = [];
  let ca: Buffer;
  let url: string;

  before(async () => {
    makeCerts(join(tmp.dir, 'certs'), ['n1', 'n2']);
    makeCerts(join(tmp.dir, 'evil'), ['n9']); // another CA, a certificate that looks like a peer's
    ca = readFileSync(join(tmp.dir, 'certs', 'ca.crt'));
    peers = await startPeers(tmp.dir, ['n1', 'n2'], 'https', () => ({
      peer_tls: { cert_file: 'certs/{node}-peer.crt', key_file: 'certs/{node}-peer.key', ca_file: 'certs/ca.crt' },
    }));
    url = `https://127.0.0.1:${peers[0]!.t.address().port}`;
  });
  after(async () => {
    await Promise.all(agents.map((a) => a.close()));
    await Promise.all(peers.map((p) => p.t.close()));
    tmp.cleanup();
  });

  const agent = (connect: ConstructorParameters<typeof Agent>[0]): Agent => {
    const a = new Agent(connect);
    agents.push(a);
    return a;
  };

  async function probeAll(dispatcher: Agent): Promise<string[]> {
    const answers: string[] = [];
    for (const path of PATHS) {
      for (const method of METHODS) {
        const r = await request(`${url}${path}`, { method, dispatcher, ...(method === 'GET' ? {} : { body: 'x', headers: { 'content-type': 'application/vnd.raftlock.peer+msgpack' } }) });
        const text = await r.body.text();
        answers.push(`${method} ${path} → ${r.statusCode} ${text.trim()}`);
      }
    }
    return answers;
  }

  for (const [what, reason, connect] of [
    ['a certificate from another CA', 'tls_untrusted_certificate', (dir: string) => ({ ca, cert: readFileSync(join(dir, 'evil', 'n9-peer.crt')), key: readFileSync(join(dir, 'evil', 'n9-peer.key')) })],
    ['no certificate', 'tls_no_certificate', () => ({ ca })],
  ] as const) {
    it(`${what}: 401 on every path and method, each counted (${reason}), nothing delivered`, async () => {
      const before = await rejected(peers[0]!.metrics, reason);
      const answers = await probeAll(agent({ connect: connect(tmp.dir) }));
      const wrong = answers.filter((a) => !/→ 401 unauthenticated$/.test(a));
      assert.deepEqual(wrong, [], `answers other than 401:\n${wrong.join('\n')}`);
      assert.equal(await rejected(peers[0]!.metrics, reason), before + PATHS.length * METHODS.length, 'every refusal counted');
      assert.equal(peers[0]!.inbox.length, 0);
    });
  }

  it('no certificate on a resumed TLS session: still 401 on the Raft route, counted', async () => {
    const port = peers[0]!.t.address().port;
    // one raw HTTP/1.1 request on its own TLS connection; returns the status and the session
    const once = (session?: Buffer): Promise<{ status: number; reused: boolean; session: Buffer | undefined }> =>
      new Promise((resolve, reject) => {
        let got: Buffer | undefined;
        let text = '';
        let reused = false;
        const s = tls.connect({ host: '127.0.0.1', port, ca, ...(session ? { session } : {}) }, () => {
          reused = s.isSessionReused();
          s.write(`POST ${MESSAGES_PATH} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/vnd.raftlock.peer+msgpack\r\ncontent-length: 1\r\nconnection: close\r\n\r\nx`);
        });
        s.on('session', (b: Buffer) => (got = b));
        s.on('data', (d: Buffer) => (text += d.toString('latin1')));
        s.on('error', reject);
        s.on('close', () => resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0), reused, session: got }));
      });
    const before = await rejected(peers[0]!.metrics, 'tls_no_certificate');
    const first = await once();
    assert.equal(first.status, 401);
    assert.ok(first.session, 'the server issued a session ticket');
    const second = await once(first.session);
    assert.equal(second.reused, true, 'the second connection resumed the first one\'s session');
    assert.equal(second.status, 401, 'a resumed session without a certificate is still refused');
    assert.equal(await rejected(peers[0]!.metrics, 'tls_no_certificate'), before + 2);
    assert.equal(peers[0]!.inbox.length, 0);
  });

  it('a member certificate still gets the routing answers (404 unknown path, 405 wrong method)', async () => {
    const member = agent({ connect: { ca, cert: readFileSync(join(tmp.dir, 'certs', 'n2-peer.crt')), key: readFileSync(join(tmp.dir, 'certs', 'n2-peer.key')) } });
    const r1 = await request(`${url}/`, { method: 'GET', dispatcher: member });
    assert.equal(r1.statusCode, 404);
    await r1.body.dump();
    const r2 = await request(`${url}${MESSAGES_PATH}`, { method: 'GET', dispatcher: member });
    assert.equal(r2.statusCode, 405);
    await r2.body.dump();
  });
});
