// The TLS passthrough (docs/security.md "Mutual TLS"): two transports with mutual TLS
// exchange messages (over a stream) and a snapshot; a client without a certificate is
// refused at the handshake.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request, Agent } from 'undici';
import type { Message } from '../../src/raft/core/types.js';
import { HttpTransport } from '../../src/transport/http-transport.js';
import { MESSAGES_PATH } from '../../src/transport/peer-server.js';
import { captureLogger, hb, waitFor } from './helpers.js';

function haveOpenssl(): boolean {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

describe('HttpTransport over mutual TLS', { skip: haveOpenssl() ? false : 'openssl not installed' }, () => {
  it('exchanges messages and a snapshot; refuses clients without a certificate', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'raftlock-tls-'));
    const nodes: HttpTransport[] = [];
    try {
      // one self-signed certificate serves as CA, server and client certificate
      execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-days', '1', '-subj', '/CN=raftlock-test', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
      const key = readFileSync(join(dir, 'key.pem'));
      const cert = readFileSync(join(dir, 'cert.pem'));
      const tls = { server: { key, cert, ca: [cert], requestCert: true, rejectUnauthorized: true }, client: { key, cert, ca: [cert] } };
      const inbox: Message[] = [];
      const status: boolean[] = [];
      for (const id of ['n1', 'n2']) {
        const t = new HttpTransport({ self: id, cluster: 'test', listen: { host: '127.0.0.1', port: 0 }, peers: new Map(), logger: captureLogger(), tls, snapshotChunkBytes: 1000, streamIdleMs: 100 });
        nodes.push(t);
        await t.start();
      }
      const [a, b] = nodes as [HttpTransport, HttpTransport];
      const peers = new Map([['n1', `https://127.0.0.1:${a.address().port}`], ['n2', `https://127.0.0.1:${b.address().port}`]]);
      a.setPeers(peers);
      b.setPeers(peers);
      b.onMessage((m) => inbox.push(m));
      a.onSnapshotStatus((_p, ok) => status.push(ok));
      const meta = { index: 3, term: 1, conf: { voters: ['n1', 'n2'], learners: [] } };
      a.send([hb('n1', 'n2', 1), { from: 'n1', to: 'n2', term: 1, type: 'snapshot', snapshot: { meta, data: new Uint8Array(3500).fill(3) } }]);
      await waitFor(() => inbox.length === 2 && status.length === 1, 'delivery over TLS');
      assert.deepEqual(status, [true]);
      // the heartbeat went over a TLS stream, which ended with a 204 once idle
      await waitFor(() => a.stats().streams.ok === 1, 'the idle TLS stream ended cleanly');
      assert.deepEqual(a.stats().dropped, {});

      const noCert = new Agent({ connect: { ca: [cert] } });
      await assert.rejects(request(`https://127.0.0.1:${b.address().port}${MESSAGES_PATH}`, { method: 'POST', body: 'x', dispatcher: noCert }));
      await noCert.close();
      assert.equal(inbox.length, 2);
    } finally {
      await Promise.all(nodes.map((t) => t.close()));
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
