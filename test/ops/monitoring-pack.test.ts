// The monitoring pack in deploy/ (docs/operations.md "Monitoring pack"): the Prometheus
// config and alert rules parse, the alerts the issue asks for exist, the Grafana dashboard
// is well-formed, and EVERY metric the dashboard and the alerts query exists on a live node
// (a dashboard over a renamed metric shows nothing and an alert over it never fires —
// silently). The systemd unit is checked by systemd-analyze when it is installed.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parse } from 'yaml';
import { ClusterHarness, repoRoot } from '../support/cluster-harness.js';

const deploy = join(repoRoot, 'deploy');
/** series Prometheus itself makes, not the node */
const PROMETHEUS_OWN = new Set(['up']);
/** PromQL words that look like metric names */
const PROMQL_WORDS = new Set(['sum', 'max', 'min', 'avg', 'by', 'without', 'rate', 'increase', 'histogram_quantile', 'le', 'on', 'group_left', 'group_right', 'and', 'or', 'unless', 'count', 'offset', 'bool', 'label_values', 'irate', 'delta', 'abs', 'absent']);

interface Rule { alert: string; expr: string; for?: string; labels?: Record<string, string>; annotations?: Record<string, string> }

function alertRules(): Rule[] {
  const doc = parse(readFileSync(join(deploy, 'prometheus', 'raftlock-alerts.yml'), 'utf8')) as { groups: { name: string; rules: Rule[] }[] };
  assert.ok(Array.isArray(doc.groups) && doc.groups.length > 0, 'alert file has groups');
  return doc.groups.flatMap((g) => g.rules);
}

function dashboardExprs(): string[] {
  const d = JSON.parse(readFileSync(join(deploy, 'grafana', 'raftlock-dashboard.json'), 'utf8')) as { uid: string; title: string; panels: { type: string; title: string; targets?: { expr: string }[]; gridPos: unknown }[] };
  assert.equal(typeof d.uid, 'string');
  assert.equal(typeof d.title, 'string');
  const out: string[] = [];
  for (const p of d.panels) {
    assert.ok(p.gridPos, `panel ${p.title} has a position`);
    if (p.type === 'row') continue;
    assert.ok(p.targets && p.targets.length > 0, `panel ${p.title} queries something`);
    for (const t of p.targets) out.push(t.expr);
  }
  return out;
}

/** Metric names in a PromQL expression: identifiers outside label matchers and strings,
 *  not followed by "(" (functions) and not PromQL keywords. */
export function metricNames(expr: string): string[] {
  const noStrings = expr.replace(/"(?:[^"\\]|\\.)*"/g, '""').replace(/\{[^}]*\}/g, '{}').replace(/\[[^\]]*\]/g, '[]');
  const noGrouping = noStrings.replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, '');
  const names = new Set<string>();
  for (const m of noGrouping.matchAll(/\b([a-zA-Z_:][a-zA-Z0-9_:]*)\b(?!\s*\()/g)) {
    const n = m[1]!;
    if (PROMQL_WORDS.has(n) || /^\d/.test(n) || n.startsWith('$')) continue;
    names.add(n);
  }
  return [...names];
}

describe('monitoring pack (deploy/)', { timeout: 60_000 }, () => {
  let h: ClusterHarness;
  before(async () => {
    h = await ClusterHarness.create({ nodes: 3 });
  });
  after(async () => {
    await h?.close();
  });

  it('has the alerts the issue asks for, each with severity and a summary', () => {
    const rules = alertRules();
    const byName = new Map(rules.map((r) => [r.alert, r]));
    for (const name of ['RaftlockNoLeader', 'RaftlockFrequentLeaderChanges', 'RaftlockCommitLatencyHigh', 'RaftlockFollowerLagging', 'RaftlockFsyncSlow', 'RaftlockSessionsNearLimit']) {
      const r = byName.get(name);
      assert.ok(r, `alert ${name} exists`);
      assert.ok(r.labels?.severity, `${name} has a severity`);
      assert.ok(r.annotations?.summary && r.annotations.description, `${name} has a summary and a description`);
    }
    assert.match(byName.get('RaftlockCommitLatencyHigh')!.expr, /histogram_quantile\(0\.99,.*raftlock_raft_commit_latency_seconds_bucket/);
    assert.match(byName.get('RaftlockFsyncSlow')!.expr, /raftlock_storage_sync_seconds_bucket/);
    const prom = parse(readFileSync(join(deploy, 'prometheus', 'prometheus.yml'), 'utf8')) as { rule_files: string[]; scrape_configs: { job_name: string; metrics_path: string }[] };
    assert.deepEqual(prom.rule_files, ['raftlock-alerts.yml']);
    assert.equal(prom.scrape_configs[0]?.job_name, 'raftlock');
    assert.equal(prom.scrape_configs[0]?.metrics_path, '/metrics');
  });

  it('every metric the dashboard and the alerts query exists on a live node', async () => {
    h.startAll();
    const leader = await h.waitForLeader();
    // traffic, so that labelled series (routes, results) and histograms have samples
    const g = await h.request(leader, 'POST', '/v1/locks/mon/a/acquire', { ttl_ms: 10_000 });
    assert.equal(g.status, 200, g.text);
    const scrape = await h.request(leader, 'GET', '/metrics');
    assert.equal(scrape.status, 200);
    const present = new Set<string>();
    for (const line of scrape.text.split('\n')) {
      const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{|\s)/.exec(line);
      if (m) present.add(m[1]!);
    }
    const exprs = [...alertRules().map((r) => r.expr), ...dashboardExprs()];
    const wanted = new Set(exprs.flatMap(metricNames));
    assert.ok(wanted.size >= 15, `found only ${wanted.size} metric names: ${[...wanted].join(', ')}`);
    const missing = [...wanted].filter((n) => !PROMETHEUS_OWN.has(n) && !present.has(n));
    assert.deepEqual(missing, [], `queried but not exported by a live leader: ${missing.join(', ')}`);
    console.log(`# ${wanted.size} metric names queried by deploy/, all exported`);
  });

  it('the metric-name extraction sees through PromQL', () => {
    assert.deepEqual(metricNames('max by (cluster, member) (raftlock_raft_follower_lag_entries{cluster=~"$cluster"}) > 1000').sort(), ['raftlock_raft_follower_lag_entries']);
    assert.deepEqual(metricNames('histogram_quantile(0.99, sum by (le) (rate(x_bucket{a="b"}[5m]))) / on(cluster) y').sort(), ['x_bucket', 'y']);
  });

  it('the systemd unit runs serve per node and is hardened', () => {
    const unit = readFileSync(join(deploy, 'systemd', 'raftlock@.service'), 'utf8');
    assert.match(unit, /^ExecStart=\S+ serve --config \S+ --node %i/m);
    for (const d of ['NoNewPrivileges=yes', 'ProtectSystem=strict', 'ProtectHome=yes', 'PrivateTmp=yes', 'CapabilityBoundingSet=', 'RestrictAddressFamilies=', 'SystemCallFilter=@system-service', 'ExecReload=/bin/kill -HUP $MAINPID', 'RestartPreventExitStatus=2']) {
      assert.ok(unit.includes(d), `unit has ${d}`);
    }
    if (!existsSync('/usr/bin/systemd-analyze')) {
      console.log('# systemd-analyze not installed: unit syntax not verified');
      return;
    }
    const dir = mkdtempSync(join(tmpdir(), 'raftlock-unit-'));
    try {
      const path = join(dir, 'raftlock@n1.service');
      // verify wants ExecStart's binary to exist: point it at node
      writeFileSync(path, unit.replaceAll('/usr/bin/raftlock', process.execPath));
      const v = spawnSync('systemd-analyze', ['verify', path], { encoding: 'utf8' });
      assert.equal(v.status, 0, `systemd-analyze verify: ${v.stderr}`);
      const s = spawnSync('systemd-analyze', ['security', '--offline=yes', path], { encoding: 'utf8' });
      const m = /Overall exposure level for \S+: ([\d.]+)/.exec(s.stdout);
      assert.ok(m, `systemd-analyze security: ${s.stdout.slice(-300)} ${s.stderr}`);
      assert.ok(Number(m[1]) <= 2.5, `exposure ${m[1]} should be <= 2.5`);
      console.log(`# systemd-analyze security: exposure ${m[1]}`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
