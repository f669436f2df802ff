// `raftlock cluster` (what `npm start` runs) on a secured cluster file: its leader watch
// reaches the https API with the cluster's CA, presents a node's certificate when the API
// asks for one (client_cert_auth), and sends RAFTLOCK_TOKEN when auth is on; without a
// token it says what to set instead of showing nothing.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { ClusterHarness, eventually } from '../support/cluster-harness.js';
import { startClusterCommand } from '../support/cluster-command.js';
import { haveOpenssl, makeCerts, TOKENS, writeTokens } from './helpers.js';

const CERTS = 'certs';

describe('raftlock cluster on a secured cluster file', { skip: haveOpenssl() ? false : 'openssl not installed' }, () => {
  const stops: (() => Promise<unknown>)[] = [];
  let h: ClusterHarness | undefined;
  after(async () => {
    for (const s of stops.reverse()) await s();
    await h?.close();
  });

  it('shows the leader over https with client certificates and a token; says what to set without one', async () => {
    // the harness only writes the cluster file and certificates; the command starts the nodes
    h = await ClusterHarness.create({
      apiScheme: 'https',
      extraConfig: (dir) => {
        makeCerts(join(dir, CERTS), ['n1', 'n2', 'n3']);
        return {
          tls: { cert_file: `${CERTS}/{node}.crt`, key_file: `${CERTS}/{node}.key`, ca_file: `${CERTS}/ca.crt`, client_cert_auth: true },
          auth: { tokens_file: writeTokens(dir) },
        };
      },
    });
    const { RAFTLOCK_TOKEN: _drop, ...base } = process.env;
    const without = startClusterCommand(h.configPath, { env: base });
    stops.push(without.stop);
    await eventually(async () => /auth is on: set RAFTLOCK_TOKEN/.test(without.output()), 10_000, () => `the hint (output: ${JSON.stringify(without.output())})`);
    assert.equal(await without.stop(), 0, without.output());

    const withToken = startClusterCommand(h.configPath, { env: { ...base, RAFTLOCK_TOKEN: TOKENS.reader.secret } });
    stops.push(withToken.stop);
    // against a hang: three nodes starting beside other CI lanes took up to 9 s (test/cluster/cli.test.ts)
    await eventually(async () => /leader: n\d \(term \d+\)/.test(withToken.output()), 30_000, () => `a leader line (output: ${JSON.stringify(withToken.output())})`);
    assert.doesNotMatch(withToken.output(), /auth is on/);
    assert.equal(await withToken.stop(), 0, withToken.output());
  });
});
