// GET /metrics: every metric of the contract is present with its type and labels, parsed
// from the Prometheus text format; the HTTP metric labels routes by template only.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Metrics } from '../../src/metrics.js';
import { makeApp } from './helpers.js';

interface Family { type: string; samples: { name: string; labels: Record<string, string>; value: number }[] }

/** A small parser for the text exposition format (enough for prom-client's output). */
function parseExposition(text: string): Map<string, Family> {
  const fams = new Map<string, Family>();
  for (const line of text.split('\n')) {
    if (line.startsWith('# TYPE ')) {
      const [, , name, type] = line.split(' ');
      fams.set(name as string, { type: type as string, samples: [] });
      continue;
    }
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    assert.ok(m, `unparseable sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const lm of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[lm[1] as string] = lm[2] as string;
    const sampleName = m[1] as string;
    const family = [...fams.keys()].filter((f) => sampleName === f || sampleName.startsWith(`${f}_`)).sort((a, b) => b.length - a.length)[0];
    assert.ok(family, `sample ${sampleName} before its # TYPE`);
    fams.get(family)?.samples.push({ name: sampleName, labels, value: Number(m[3]) });
  }
  return fams;
}

const CONTRACT: [string, string, string[]][] = [
  ['raftlock_raft_term', 'gauge', []],
  ['raftlock_raft_is_leader', 'gauge', []],
  ['raftlock_raft_commit_index', 'gauge', []],
  ['raftlock_raft_applied_index', 'gauge', []],
  ['raftlock_raft_leader_changes_total', 'counter', []],
  ['raftlock_raft_proposals_total', 'counter', ['result']],
  ['raftlock_raft_commit_latency_seconds', 'histogram', []],
  ['raftlock_storage_sync_seconds', 'histogram', []],
  ['raftlock_sessions_active', 'gauge', []],
  ['raftlock_locks_held', 'gauge', []],
  ['raftlock_lock_waiters', 'gauge', []],
  ['raftlock_lock_acquire_total', 'counter', ['result']],
  ['raftlock_lock_wait_seconds', 'histogram', []],
  ['raftlock_http_request_duration_seconds', 'histogram', ['route', 'method', 'status_code']],
];

describe('metrics', () => {
  it('a scrape has every contract metric, typed, plus default process metrics', async () => {
    const metrics = new Metrics();
    const { app } = makeApp({ metrics });
    try {
      metrics.raftTerm.set(4);
      metrics.raftCommitLatency.observe(0.0007);
      metrics.storageSync.observe(0.0002);
      metrics.lockWait.observe(1.5);
      metrics.proposal('committed');
      metrics.acquireOutcome('acquired');
      await app.inject({ method: 'POST', url: '/v1/locks/a%2Fsecret-name/acquire' });
      await app.inject({ method: 'GET', url: '/v1/sessions/s1' });
      await app.inject({ method: 'GET', url: '/no/such/route/xyz' });
      const r = await app.inject({ method: 'GET', url: '/metrics' });
      assert.equal(r.statusCode, 200);
      assert.match(String(r.headers['content-type']), /^text\/plain; version=0\.0\.4/);
      const fams = parseExposition(r.body);
      for (const [name, type, labels] of CONTRACT) {
        const f = fams.get(name);
        assert.ok(f, `missing ${name}`);
        assert.equal(f.type, type, `${name} type`);
        assert.ok(f.samples.length > 0, `${name} has samples`);
        for (const l of labels) assert.ok(f.samples.some((s) => l in s.labels), `${name} has label ${l}`);
      }
      assert.ok(fams.has('process_cpu_user_seconds_total'), 'default process metrics');
      assert.equal(fams.get('raftlock_raft_term')?.samples[0]?.value, 4);
      const commit = fams.get('raftlock_raft_commit_latency_seconds');
      assert.ok(commit?.samples.some((s) => s.labels.le === '0.001' && s.value === 1), 'sub-millisecond bucket resolution');
      assert.ok(commit?.samples.some((s) => s.labels.le === '0.0005' && s.value === 0));
      assert.equal(fams.get('raftlock_raft_proposals_total')?.samples.find((s) => s.labels.result === 'committed')?.value, 1);
      assert.equal(fams.get('raftlock_raft_proposals_total')?.samples.find((s) => s.labels.result === 'timeout')?.value, 0, 'pre-created at 0');
      // beyond the contract: the core's refusals (docs/api.md "Metrics"), each reason at 0
      assert.deepEqual(fams.get('raftlock_raft_messages_refused_total')?.samples.map((s) => [s.labels.reason, s.value]).sort(), [['bad_field', 0], ['bad_header', 0], ['misaddressed', 0]]);

      const routes = new Set(fams.get('raftlock_http_request_duration_seconds')?.samples.map((s) => s.labels.route));
      assert.ok(routes.has('/v1/locks/{name}/acquire'), [...routes].join(','));
      assert.ok(routes.has('/v1/sessions/{id}'));
      assert.ok(routes.has('unmatched'));
      assert.ok(![...routes].some((x) => x?.includes('secret') || x?.includes('xyz')), 'raw URLs never become labels');
      const acq = fams.get('raftlock_http_request_duration_seconds')?.samples.find((s) => s.name.endsWith('_count') && s.labels.route === '/v1/locks/{name}/acquire');
      assert.deepEqual(acq?.labels, { route: '/v1/locks/{name}/acquire', method: 'POST', status_code: '200' });
    } finally {
      await app.close();
    }
  });

  it('two Metrics in one process keep separate registries', async () => {
    const a = new Metrics({ defaultMetrics: false });
    const b = new Metrics({ defaultMetrics: false, defaultLabels: { node: 'n2' } });
    a.raftTerm.set(1);
    b.raftTerm.set(2);
    assert.match((await a.scrape()).body, /^raftlock_raft_term 1$/m);
    assert.match((await b.scrape()).body, /^raftlock_raft_term\{node="n2"\} 2$/m);
  });

  it('the state gauges read the node\'s state at the scrape, not at the last tick', async () => {
    const m = new Metrics({ defaultMetrics: false });
    const raft = { term: 3, commit: 10, applied: 9 };
    const fsm = { sessions: 4, heldLocks: 2, waiters: 1, semaphoresInUse: 5, electionLeaders: 1 };
    m.readStateFrom({ raft: () => raft, fsm: () => fsm });
    const values = async (): Promise<Record<string, number>> => {
      const fams = parseExposition((await m.scrape()).body);
      const v = (name: string): number => fams.get(name)?.samples[0]?.value ?? Number.NaN;
      return {
        term: v('raftlock_raft_term'), commit: v('raftlock_raft_commit_index'), applied: v('raftlock_raft_applied_index'),
        sessions: v('raftlock_sessions_active'), held: v('raftlock_locks_held'), waiters: v('raftlock_lock_waiters'),
        permits: v('raftlock_semaphores_in_use'), elections: v('raftlock_elections_led'),
      };
    };
    assert.deepEqual(await values(), { term: 3, commit: 10, applied: 9, sessions: 4, held: 2, waiters: 1, permits: 5, elections: 1 });
    // the state changes, nothing else happens: the next scrape shows it
    Object.assign(raft, { term: 4, commit: 12, applied: 12 });
    Object.assign(fsm, { sessions: 6, heldLocks: 0, waiters: 0, semaphoresInUse: 0, electionLeaders: 0 });
    assert.deepEqual(await values(), { term: 4, commit: 12, applied: 12, sessions: 6, held: 0, waiters: 0, permits: 0, elections: 0 });
  });
});
