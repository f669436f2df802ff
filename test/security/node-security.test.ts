// setupSecurity's start-up rules (docs/security.md): the cluster secret's sources and checks, TLS
// file problems as one-line ConfigErrors, and the loud warning for a peer port beyond
// loopback with neither peer TLS nor a secret. Then a real 3-process cluster where one
// node has the wrong secret (`{node}` in cluster_secret_file), set after the cluster
// bootstrapped: the other two serve, the odd one is refused and counted, and never joins in.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { X509Certificate } from 'node:crypto';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { FastifyInstance } from 'fastify';
import { Pool } from 'undici';
import type { HttpTransport } from '../../src/transport/http-transport.js';
import { join } from 'node:path';
import pino from 'pino';
import { Metrics } from '../../src/metrics.js';
import { ConfigError, resolveNode } from '../../src/config.js';
import { readClusterSecret, setupSecurity } from '../../src/security/node-security.js';
import { ClusterHarness, eventually } from '../support/cluster-harness.js';
import { configFor, haveOpenssl, makeCerts, silent, tempDir } from './helpers.js';

function capture(): { logger: pino.Logger; lines: () => { level: number; msg: string }[] } {
  const out: string[] = [];
  const logger = pino({ level: 'info' }, { write: (s: string) => void out.push(s) });
  return { logger, lines: () => out.map((l) => JSON.parse(l) as { level: number; msg: string }) };
}

describe('cluster secret sources', () => {
  const tmp = tempDir('secret');
  after(() => tmp.cleanup());
  const secretFile = (name: string, text: string, mode = 0o600) => {
    writeFileSync(join(tmp.dir, name), text, { mode });
    return name;
  };

  it('the file (trimmed, {node} replaced) wins over the environment; the environment is the fallback', () => {
    secretFile('n1.secret', '  from-the-file-0123456789\n');
    const warn: string[] = [];
    const c = configFor(tmp.dir, { cluster_secret_file: '{node}.secret' });
    assert.equal(readClusterSecret(c, 'n1', { RAFTLOCK_CLUSTER_SECRET: 'from-the-env-0123456789' }, (m) => warn.push(m))?.toString(), 'from-the-file-0123456789');
    assert.deepEqual(warn, []);
    assert.equal(readClusterSecret(configFor(tmp.dir), 'n1', { RAFTLOCK_CLUSTER_SECRET: ' from-the-env-0123456789 ' }, () => undefined)?.toString(), 'from-the-env-0123456789');
    assert.equal(readClusterSecret(configFor(tmp.dir), 'n1', {}, () => undefined), null);
  });
  it('warns about a group/world-readable file; refuses short secrets and missing files in one line', () => {
    secretFile('open.secret', 'an-open-secret-0123456789', 0o644);
    const warn: string[] = [];
    readClusterSecret(configFor(tmp.dir, { cluster_secret_file: 'open.secret' }), 'n1', {}, (m) => warn.push(m));
    assert.match(warn[0] ?? '', /readable by group or others; chmod 600/);
    secretFile('short.secret', 'short\n');
    assert.throws(() => readClusterSecret(configFor(tmp.dir, { cluster_secret_file: 'short.secret' }), 'n1', {}, () => undefined), (e: Error) => e instanceof ConfigError && /at least 16 bytes/.test(e.message));
    assert.throws(() => readClusterSecret(configFor(tmp.dir), 'n1', { RAFTLOCK_CLUSTER_SECRET: 'short' }, () => undefined), /RAFTLOCK_CLUSTER_SECRET: the cluster secret must be at least 16 bytes/);
    assert.throws(() => readClusterSecret(configFor(tmp.dir, { cluster_secret_file: 'nope.secret' }), 'n1', {}, () => undefined), (e: Error) => e instanceof ConfigError && /nope\.secret: cannot read \(ENOENT\)/.test(e.message));
  });
});

describe('setupSecurity start-up checks', () => {
  const tmp = tempDir('setup');
  after(() => tmp.cleanup());
  const setup = async (extra: Record<string, unknown>, logger: pino.Logger = silent, scheme: { api?: string; peer?: string } = {}) => {
    const config = configFor(tmp.dir, extra, scheme);
    return setupSecurity({ config, resolved: resolveNode(config, 'n1'), logger, registry: new Metrics({ defaultMetrics: false }).registry, env: {} });
  };

  it('warns loudly when the peer port listens beyond loopback with neither peer TLS nor a secret', async () => {
    const wide = { nodes: [{ id: 'n1', api: 'http://127.0.0.1:1', peer: 'http://127.0.0.1:2', listen_peer: '0.0.0.0:2' }] };
    const a = capture();
    await setup(wide, a.logger);
    const warning = a.lines().find((l) => /^INSECURE: the peer transport listens on 0\.0\.0\.0/.test(l.msg));
    assert.ok(warning, JSON.stringify(a.lines()));
    assert.equal(warning.level, 40, 'warn level');
    const b = capture();
    writeFileSync(join(tmp.dir, 'ok.secret'), 'a-good-secret-0123456789', { mode: 0o600 });
    await setup({ ...wide, cluster_secret_file: 'ok.secret' }, b.logger);
    assert.equal(b.lines().filter((l) => /INSECURE/.test(l.msg)).length, 0);
    const c = capture();
    await setup({}, c.logger);
    assert.equal(c.lines().filter((l) => /INSECURE/.test(l.msg)).length, 0, 'loopback: no warning');
  });

  it('refuses to start on a non-loopback API without an auth block', async () => {
    await assert.rejects(setup({ nodes: [{ id: 'n1', api: 'http://10.9.8.7:1', peer: 'http://127.0.0.1:2' }] }), (e: Error) => e instanceof ConfigError && /auth: required/.test(e.message) && !e.message.includes('\n'));
  });

  it('bad TLS files stop the start with one line naming the file', { skip: haveOpenssl() ? false : 'openssl not installed' }, async () => {
    const certs = join(tmp.dir, 'certs');
    makeCerts(certs, ['n1', 'n2']);
    const tlsBlock = (cert: string, key: string) => ({ tls: { cert_file: `certs/${cert}`, key_file: `certs/${key}`, ca_file: 'certs/ca.crt' } });
    const api = { api: 'https' };
    await setup(tlsBlock('{node}.crt', '{node}.key'), silent, api); // the good case
    const cases: [Record<string, unknown>, RegExp][] = [
      [tlsBlock('missing.crt', 'n1.key'), /tls\.cert_file .*missing\.crt: cannot read \(ENOENT\)/],
      [tlsBlock('n1.key', 'n1.key'), /tls\.cert_file .*n1\.key: not a PEM certificate/],
      [tlsBlock('n1.crt', 'n2.key'), /tls: .*n2\.key is not the key of .*n1\.crt/],
      [tlsBlock('n1.crt', 'ca.crt'), /tls\.key_file .*ca\.crt: not a PEM private key/],
    ];
    for (const [extra, re] of cases) {
      await assert.rejects(setup(extra, silent, api), (e: Error) => e instanceof ConfigError && re.test(e.message) && !e.message.includes('\n'), String(re));
    }
  });

  it('SIGHUP reload: connections to other members (forwarding, probes) present the new API certificate', { skip: haveOpenssl() ? false : 'openssl not installed' }, async () => {
    const certs = join(tmp.dir, 'reload-certs');
    makeCerts(certs, ['n1']);
    const pem = (f: string): Buffer => readFileSync(join(certs, f));
    const serialOf = (f: string): string => new X509Certificate(pem(f)).serialNumber;
    const security = await setup({ tls: { cert_file: 'reload-certs/{node}.crt', key_file: 'reload-certs/{node}.key', ca_file: 'reload-certs/ca.crt', client_cert_auth: true } }, silent, { api: 'https' });
    // a stand-in leader that asks for a client certificate and answers with its serial;
    // one request per connection, so every request shows the certificate of a new connection
    const leader = createHttpsServer({ cert: pem('n1.crt'), key: pem('n1.key'), ca: pem('ca.crt'), requestCert: true, rejectUnauthorized: true }, (req, res) => {
      res.setHeader('connection', 'close');
      res.end((req.socket as TLSSocket).getPeerCertificate().serialNumber);
    });
    await new Promise<void>((r) => leader.listen(0, '127.0.0.1', r));
    const pool = new Pool(`https://127.0.0.1:${(leader.address() as AddressInfo).port}`, { connect: security.apiClientConnect!(5000) });
    const presented = async (): Promise<string> => (await (await pool.request({ path: '/', method: 'GET' })).body.text()).toUpperCase();
    try {
      const first = serialOf('n1.crt');
      assert.equal(await presented(), first.toUpperCase());
      makeCerts(certs, ['n1']); // same CA key, a new leaf with a new serial
      const r = security.reload({ api: { server: { setSecureContext: () => undefined } } as unknown as FastifyInstance, transport: {} as HttpTransport });
      assert.deepEqual(r, { ok: ['tls'], failed: [] });
      const second = serialOf('n1.crt');
      assert.notEqual(second, first);
      assert.equal(await presented(), second.toUpperCase(), 'the pool made before the reload presents the new certificate on its next connection');
    } finally {
      await pool.close();
      await new Promise((r) => leader.close(r));
    }
  });
});

describe('a real cluster where one node has the wrong secret', () => {
  let h: ClusterHarness | undefined;
  after(async () => {
    await h?.close();
  });

  it('the two nodes with the secret serve; the third is refused (counted) and never takes part', async () => {
    // A brand-new cluster's first election is unanimous (docs/membership.md
    // "Incarnations"), so the cluster bootstraps with every node holding the secret; then
    // n3 is restarted with another one, as a bad configuration change would leave it.
    let dir = '';
    const secret = (id: string, text: string): void => writeFileSync(join(dir, `${id}.secret`), `${text}\n`, { mode: 0o600 });
    h = await ClusterHarness.create({
      extraConfig: (d) => {
        dir = d;
        for (const id of ['n1', 'n2', 'n3']) secret(id, 'the-cluster-secret-0123456789');
        return { cluster_secret_file: '{node}.secret' };
      },
    });
    h.startAll();
    await h.waitForLeader();
    await h.stop('n3');
    const before = (await h.view('n1')).commit_index;
    secret('n3', 'not-the-cluster-secret-987654');
    h.start('n3');
    // the count below is a matter of n3's election timeouts once it runs; its start-up is
    // not (seconds on a loaded machine, where 10 s from the spawn was once too little)
    await eventually(async () => h!.view('n3').then(() => true, () => false), 60_000, 'n3 to serve again');
    const leader = await h.waitForLeader(20_000, ['n1', 'n2']);
    const r = await h.request(leader, 'POST', '/v1/locks/a/acquire', {});
    assert.equal(r.status, 200, r.text);
    await eventually(async () => {
      const m = await h!.request(leader, 'GET', '/metrics');
      return /raftlock_peer_auth_rejected_total\{reason="secret_bad_signature"\} [1-9]/.test(m.text);
    }, 10_000, 'the leader to count n3\'s refused requests');
    const v3 = await h.view('n3');
    assert.notEqual(v3.leader_id, leader, 'n3 never heard from the leader');
    assert.ok(v3.commit_index <= before, `n3 took no part in the log since its restart (commit ${v3.commit_index}, was ${before})`);
    assert.ok((await h.view(leader)).commit_index > before, 'the other two went on committing');
    assert.equal((await h.request('n3', 'GET', '/readyz')).status, 503);
  });
});
