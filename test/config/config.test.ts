// cluster.config.json: the repo's file loads; each kind of bad file gives ONE line that
// names the field (docs/contract.md §2 "cluster.config.json"), never a stack trace.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { DurationError, parseDuration } from '@raftlock/client';
import { MAX_DURATION_MS } from '@raftlock/client/duration';
import { ConfigError, loadConfig, parseConfig, parseDurationMs, pathForNode, resolveNode } from '../../src/config.js';
import { DEFAULT_CLUSTER_FILE } from '../../src/cli/default-cluster.js';


const repoRoot = join(import.meta.dirname, '..', '..', '..').replace(/\/dist$/, '');
const repoFile = [join(import.meta.dirname, '..', '..', 'cluster.config.json'), join(repoRoot, 'cluster.config.json')].find((p) => {
  try {
    readFileSync(p);
    return true;
  } catch {
    return false;
  }
});

type Json = Record<string, unknown> & { nodes: Record<string, unknown>[]; session: Record<string, unknown> };
/** a fresh, mutable copy of the local 3-node file (the one `raftlock cluster` writes) */
function base(): Json {
  return structuredClone(DEFAULT_CLUSTER_FILE) as unknown as Json;
}

describe('config: good files', () => {
  it("the repo's cluster.config.json loads", () => {
    assert.ok(repoFile, 'cluster.config.json found');
    const c = loadConfig(repoFile);
    assert.equal(c.cluster, 'local');
    assert.deepEqual(c.nodes.map((n) => n.id), ['n1', 'n2', 'n3']);
    assert.deepEqual(c.electionTimeoutMs, { min: 1000, max: 2000 });
    assert.equal(c.heartbeatMs, 100);
    assert.deepEqual(c.session, { defaultTtlMs: 10000, minTtlMs: 1000, maxTtlMs: 3600000, lockDelayMs: 0 });
    assert.equal(c.snapshotEveryEntries, 10000);
    assert.ok(c.dataDir.endsWith('/data') && c.dataDir.startsWith('/'));
    assert.deepEqual(c.limits, { maxSessions: 1_000_000, maxSessionsPerToken: 10_000, maxWaitersPerLock: 1000, requestsPerSecondPerClient: 0, maxLocks: 1_000_000, maxWatchStreams: 10_000 });
    assert.equal(c.eventsRetained, 10_000);
  });

  it('only nodes is required; the rest defaults to the documented values', () => {
    const c = parseConfig({ nodes: [{ id: 'a', api: 'http://h:1', peer: 'http://h:2' }] }, '/etc/raftlock/c.json');
    assert.equal(c.dataDir, '/etc/raftlock/data');
    assert.deepEqual(c.electionTimeoutMs, { min: 1000, max: 2000 });
    assert.equal(c.session.defaultTtlMs, 10_000);
  });

  it('durations accept "500ms", "10s", "1.5m", "1h" as well as numbers', () => {
    const j = base();
    j.election_timeout_ms = ['1s', '2s'];
    j.heartbeat_ms = '150ms';
    j.session = { default_ttl_ms: '1.5m', min_ttl_ms: '1s', max_ttl_ms: '1h', lock_delay_ms: 0 };
    const c = parseConfig(j, '/x/cluster.config.json');
    assert.deepEqual(c.electionTimeoutMs, { min: 1000, max: 2000 });
    assert.equal(c.heartbeatMs, 150);
    assert.equal(c.session.defaultTtlMs, 90_000);
    assert.equal(c.session.maxTtlMs, 3_600_000);
    assert.equal(parseDurationMs('0.5ms'), 'expected milliseconds (a number, or a string like "500ms"/"10s"), got "0.5ms"');
  });

  it('durations: the file and the command line share one grammar (a bare "500" is 500 ms) and one bound, 2^31-1 ms', () => {
    for (const text of ['500', ' 2s ', '0', '1.5m', '596h', '2147483647', '2147483648', '597h', '0.5ms', '1e3', '-1s', '10 s', 'fast', '']) {
      let cli: number | string;
      try {
        cli = parseDuration(text, '--ttl');
      } catch (e) {
        cli = e instanceof DurationError ? 'refused' : String(e);
      }
      const file = parseDurationMs(text);
      assert.equal(typeof file === 'number' ? file : 'refused', cli, JSON.stringify(text));
    }
    assert.equal(parseDurationMs(MAX_DURATION_MS), MAX_DURATION_MS);
    assert.equal(parseDurationMs(MAX_DURATION_MS + 1), `must be at most 2147483647 ms (about 24.8 days), got ${MAX_DURATION_MS + 1}`);
    const j = base();
    j.heartbeat_ms = '150';
    assert.equal(parseConfig(j, '/x/cluster.config.json').heartbeatMs, 150);
  });

  it('security blocks: paths resolve against the config folder, {node} kept; https URLs required', () => {
    const j = base();
    for (const n of j.nodes) {
      n.api = String(n.api).replace('http:', 'https:');
      n.peer = String(n.peer).replace('http:', 'https:');
    }
    j.tls = { cert_file: 'certs/{node}.crt', key_file: 'certs/{node}.key', ca_file: '/abs/ca.crt' };
    j.peer_tls = { cert_file: 'certs/{node}-peer.crt', key_file: 'certs/{node}-peer.key', ca_file: 'certs/ca.crt' };
    j.cluster_secret_file = 'cluster.secret';
    j.auth = { tokens_file: 'tokens.json' };
    j.limits = { max_sessions: 5, max_sessions_per_token: 2, max_waiters_per_lock: 3, requests_per_second_per_client: 100 };
    const c = parseConfig(j, '/etc/rl/cluster.config.json');
    assert.deepEqual(c.tls, { certFile: '/etc/rl/certs/{node}.crt', keyFile: '/etc/rl/certs/{node}.key', caFile: '/abs/ca.crt', clientCertAuth: false });
    assert.equal(pathForNode(c.tls?.certFile ?? '', 'n2'), '/etc/rl/certs/n2.crt');
    assert.equal(c.peerTls?.caFile, '/etc/rl/certs/ca.crt');
    assert.equal(c.clusterSecretFile, '/etc/rl/cluster.secret');
    assert.equal(c.auth?.tokensFile, '/etc/rl/tokens.json');
    assert.equal(c.limits.requestsPerSecondPerClient, 100);
  });

  it('resolveNode: listen overrides, advertised host:port otherwise, data dir per node', () => {
    const j = base();
    (j.nodes[1] as Record<string, unknown>).listen_api = '0.0.0.0:9002';
    (j.nodes[1] as Record<string, unknown>).listen_peer = '[::]:9102';
    const c = parseConfig(j, '/srv/rl/cluster.config.json');
    const n1 = resolveNode(c, 'n1');
    assert.deepEqual(n1.apiListen, { host: '127.0.0.1', port: 7001 });
    assert.deepEqual(n1.peerListen, { host: '127.0.0.1', port: 7101 });
    assert.equal(n1.dataDir, '/srv/rl/data/n1');
    const n2 = resolveNode(c, 'n2', { dataDir: '/tmp/elsewhere' });
    assert.deepEqual(n2.apiListen, { host: '0.0.0.0', port: 9002 });
    assert.deepEqual(n2.peerListen, { host: '::', port: 9102 });
    assert.equal(n2.node.api, 'http://127.0.0.1:7002', 'advertised URL unchanged');
    assert.equal(n2.dataDir, '/tmp/elsewhere');
    assert.throws(() => resolveNode(c, 'n9'), (e: Error) => e instanceof ConfigError && e.message === 'cluster.config.json: --node: unknown node "n9" (the file has: n1, n2, n3)');
  });
});

type Bad = [title: string, mutate: (j: Json) => void, expected: string];
const bad: Bad[] = [
  ['api not a URL', (j) => { j.nodes[1]!.api = 'localhost:7002'; }, 'nodes[1].api: expected an http(s) URL, got "localhost:7002"'],
  ['peer ftp URL', (j) => { j.nodes[0]!.peer = 'ftp://h:1'; }, 'nodes[0].peer: expected an http(s) URL, got "ftp://h:1"'],
  ['URL with a path', (j) => { j.nodes[0]!.api = 'http://h:1/api'; }, 'nodes[0].api: must be scheme://host:port only'],
  ['URL with credentials', (j) => { j.nodes[0]!.api = 'http://u:p@h:1'; }, 'nodes[0].api: must not contain credentials'],
  ['unknown top-level field', (j) => { j.electon_timeout_ms = [1, 2]; }, 'electon_timeout_ms: unknown field'],
  ['unknown nested field', (j) => { j.session.ttl = 5; }, 'session.ttl: unknown field'],
  ['unknown node field', (j) => { j.nodes[2]!.host = 'x'; }, 'nodes[2].host: unknown field'],
  ['missing nodes', (j) => { delete (j as Record<string, unknown>).nodes; }, 'nodes: required field is missing'],
  ['empty nodes', (j) => { j.nodes = []; }, 'nodes: expected at least 1 item(s)'],
  ['missing node id', (j) => { delete j.nodes[0]!.id; }, 'nodes[0].id: required field is missing'],
  ['bad node id', (j) => { j.nodes[0]!.id = '../etc'; }, 'nodes[0].id: expected 1-63 chars'],
  ['duplicate node id', (j) => { j.nodes[2]!.id = 'n1'; }, 'nodes[2].id: duplicate node id "n1" (also nodes[0].id)'],
  ['duplicate address', (j) => { j.nodes[1]!.api = 'http://127.0.0.1:7001/'; }, 'nodes[1].api: address http://127.0.0.1:7001 is already used by nodes[0].api'],
  ['api = peer', (j) => { j.nodes[0]!.peer = 'http://127.0.0.1:7001'; }, 'nodes[0].peer: address http://127.0.0.1:7001 is already used by nodes[0].api'],
  ['election wrong order', (j) => { j.election_timeout_ms = [2000, 1000]; }, 'election_timeout_ms: expected [min, max] with min < max, got [2000, 1000]'],
  ['election equal', (j) => { j.election_timeout_ms = [1000, 1000]; }, 'election_timeout_ms: expected [min, max] with min < max'],
  ['election not a pair', (j) => { j.election_timeout_ms = 1000; }, 'election_timeout_ms: expected [min, max], got 1000'],
  ['election three items', (j) => { j.election_timeout_ms = [1, 2, 3]; }, 'election_timeout_ms: expected at most 2 item(s)'],
  ['election negative', (j) => { j.election_timeout_ms = [-5, 1000]; }, 'election_timeout_ms[0]: expected a whole number of milliseconds >= 0, got -5'],
  ['heartbeat not below election', (j) => { j.heartbeat_ms = 1000; }, 'heartbeat_ms: must be below election_timeout_ms min (1000), got 1000'],
  ['heartbeat zero', (j) => { j.heartbeat_ms = 0; }, 'heartbeat_ms: must be > 0, got 0'],
  ['heartbeat garbage string', (j) => { j.heartbeat_ms = 'fast'; }, 'heartbeat_ms: expected milliseconds (a number, or a string like "500ms"/"10s"), got "fast"'],
  ['duration over a day', (j) => { j.session.max_ttl_ms = '2d'; }, 'session.max_ttl_ms: expected milliseconds'],
  ['ttl min > max', (j) => { j.session.min_ttl_ms = 5000; j.session.max_ttl_ms = 4000; j.session.default_ttl_ms = 4500; }, 'session.min_ttl_ms: must be <= session.max_ttl_ms (4000), got 5000'],
  ['default outside bounds', (j) => { j.session.default_ttl_ms = 500; }, 'session.default_ttl_ms: must be within [min_ttl_ms, max_ttl_ms] = [1000, 3600000], got 500'],
  ['min ttl zero', (j) => { j.session.min_ttl_ms = 0; }, 'session.min_ttl_ms: must be > 0, got 0'],
  ['snapshot fractional', (j) => { j.snapshot_every_entries = 1.5; }, 'snapshot_every_entries: expected an integer, got 1.5'],
  ['snapshot zero', (j) => { j.snapshot_every_entries = 0; }, 'snapshot_every_entries: must be >= 1, got 0'],
  ['events_retained zero', (j) => { j.events_retained = 0; }, 'events_retained: must be >= 1, got 0'],
  ['max_watch_streams negative', (j) => { j.limits = { max_watch_streams: -1 }; }, 'limits.max_watch_streams: must be >= 0, got -1'],
  ['cluster wrong type', (j) => { j.cluster = 7; }, 'cluster: expected string, got 7'],
  ['data_dir empty', (j) => { j.data_dir = ''; }, 'data_dir: must not be empty'],
  ['tls without https', (j) => { j.tls = { cert_file: 'a', key_file: 'b' }; }, 'nodes[0].api: must be https:// because "tls" is set, got "http://127.0.0.1:7001"'],
  ['https without tls', (j) => { j.nodes[0]!.peer = 'https://127.0.0.1:7101'; }, 'nodes[0].peer: is https:// but "peer_tls" is not set'],
  ['peer_tls missing ca', (j) => { j.peer_tls = { cert_file: 'a', key_file: 'b' }; }, 'peer_tls.ca_file: required field is missing'],
  ['tls unknown field', (j) => { j.tls = { cert_file: 'a', key_file: 'b', verify: false }; }, 'tls.verify: unknown field'],
  ['auth missing tokens_file', (j) => { j.auth = {}; }, 'auth.tokens_file: required field is missing'],
  ['limits negative', (j) => { j.limits = { max_waiters_per_lock: -1 }; }, 'limits.max_waiters_per_lock: must be >= 1, got -1'],
  ['limits unknown', (j) => { j.limits = { max_lock: 5 }; }, 'limits.max_lock: unknown field'],
  ['auth both tokens_file and disabled', (j) => { j.auth = { tokens_file: 't.json', disabled: true }; }, 'auth.disabled: cannot be set together with auth.tokens_file'],
  ['auth disabled false', (j) => { j.auth = { disabled: false }; }, 'auth.disabled: '],
  ['listen_api malformed', (j) => { j.nodes[0]!.listen_api = '7001'; }, 'nodes[0].listen_api: expected "host:port" (port 0-65535), got "7001"'],
  ['listen_peer port too big', (j) => { j.nodes[0]!.listen_peer = 'h:70000'; }, 'nodes[0].listen_peer: expected "host:port"'],
  ['not an object', (j) => { for (const k of Object.keys(j)) delete (j as Record<string, unknown>)[k]; Object.assign(j, { nodes: 'n1,n2' }); }, 'nodes: expected array, got "n1,n2"'],
];

describe('config: each kind of bad file gives one line naming the field', () => {
  for (const [title, mutate, expected] of bad) {
    it(title, () => {
      const j = base();
      mutate(j);
      assert.throws(
        () => parseConfig(j, '/somewhere/cluster.config.json'),
        (e: Error) => {
          assert.ok(e instanceof ConfigError, `not a ConfigError: ${String(e)}`);
          assert.ok(!e.message.includes('\n'), `one line: ${e.message}`);
          assert.ok(e.message.startsWith(`cluster.config.json: ${expected}`), `got: ${e.message}\nwant prefix: cluster.config.json: ${expected}`);
          return true;
        },
      );
    });
  }
});

describe('config: file-level problems', () => {
  const dir = mkdtempSync(join(tmpdir(), 'raftlock-config-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('missing file', () => {
    assert.throws(() => loadConfig(join(dir, 'nope.json')), { name: 'ConfigError', message: 'nope.json: cannot read the file (no such file)' });
  });
  it('invalid JSON', () => {
    const p = join(dir, 'bad.json');
    writeFileSync(p, '{ "nodes": [ }\n');
    assert.throws(() => loadConfig(p), (e: Error) => e instanceof ConfigError && /^bad\.json: invalid JSON: /.test(e.message) && !e.message.includes('\n'));
  });
  it('a directory instead of a file', () => {
    assert.throws(() => loadConfig(dir), (e: Error) => e instanceof ConfigError && e.message.includes('cannot read the file (EISDIR)'));
  });
  it('several problems: the first is named, the rest counted', () => {
    const j = base();
    j.foo = 1;
    j.heartbeat_ms = 'x';
    assert.throws(() => parseConfig(j, 'c.json'), (e: Error) => /^c\.json: \S+: .* \(and 1 more problem\)$/.test(e.message));
  });
  it('a file in another folder resolves data_dir against that folder', () => {
    const p = join(dir, 'cluster.config.json');
    writeFileSync(p, JSON.stringify(base()));
    assert.equal(loadConfig(p).dataDir, join(dir, 'data'));
  });
});
