// The `raftlock` command (the real bin, compiled sources) against a real 3-node cluster:
// `lock` runs a command with the token in its environment, releases, passes the exit code
// through, and kills the command when the lock is lost; the one-shot commands, --json,
// exit codes and one-line errors.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { binPath, ClusterHarness, eventually, freePort } from '../support/cluster-harness.js';
import { RaftlockClient, type WatchEvent } from '@raftlock/client';
import { killGroup, runToEnd, type Run } from '../support/run-to-end.js';

const running = new Set<ChildProcess>();

/** Runs `raftlock …`; a hung process is killed after `timeoutMs` (and fails the test). */
function raftlock(args: string[], o: { timeoutMs?: number; onSpawn?: (p: ChildProcess) => void; env?: Record<string, string> } = {}): Promise<Run> {
  const env = { ...process.env, RAFTLOCK_ENDPOINTS: '', ...o.env };
  return runToEnd(process.execPath, [binPath, ...args], { env, timeoutMs: o.timeoutMs ?? 30_000, running, what: `raftlock ${args.join(' ')}`, ...(o.onSpawn ? { onSpawn: o.onSpawn } : {}) });
}

/** A child for `raftlock lock`: records its env, then exits with CODE, or waits for SIGTERM. */
const CHILD = `
const fs = require('node:fs');
const [out, mode] = process.argv.slice(1);
// signal handlers first: the test signals as soon as the .env file exists
if (mode === 'wait') {
  process.on('SIGTERM', () => { fs.writeFileSync(out + '.term', String(Date.now())); process.exit(0); });
  setInterval(() => {}, 1000);
} else if (mode === 'stubborn') {
  process.on('SIGTERM', () => fs.writeFileSync(out + '.term', String(Date.now())));
  setInterval(() => {}, 1000);
}
// written whole, then renamed: the test reads it as soon as it exists (ci25 read it empty)
fs.writeFileSync(out + '.env.part', JSON.stringify({ token: process.env.RAFTLOCK_FENCING_TOKEN, session: process.env.RAFTLOCK_SESSION_ID, lock: process.env.RAFTLOCK_LOCK, semaphore: process.env.RAFTLOCK_SEMAPHORE, permits: process.env.RAFTLOCK_PERMITS, election: process.env.RAFTLOCK_ELECTION, value: process.env.RAFTLOCK_VALUE }));
fs.renameSync(out + '.env.part', out + '.env');
if (mode !== 'wait' && mode !== 'stubborn') process.exit(Number(mode));`;

describe('raftlock CLI against a real 3-node cluster', () => {
  let h: ClusterHarness;
  let dir: string;
  let ep: string[];

  before(async () => {
    h = await ClusterHarness.create();
    h.startAll();
    await h.waitForLeader();
    dir = mkdtempSync(join(tmpdir(), 'raftlock-cli-test-'));
    ep = ['--endpoints', h.endpoints.join(',')];
  });
  after(async () => {
    for (const p of running) killGroup(p);
    for (const n of h?.nodes ?? []) h.resume(n.id);
    await h?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('lock A B -- CMD takes both together, one token variable per name; two such commands in opposite order never deadlock', async () => {
    const dump = `require('node:fs').writeFileSync(process.argv[1], JSON.stringify(Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('RAFTLOCK_') && k !== 'RAFTLOCK_ENDPOINTS'))))`;
    const out = join(dir, 'set.json');
    const r = await raftlock(['lock', 'cli/accounts/2', 'cli/accounts/1', ...ep, '--ttl', '5s', '--', process.execPath, '-e', dump, out]);
    assert.equal(r.code, 0, r.stderr);
    const env = JSON.parse(readFileSync(out, 'utf8')) as Record<string, string>;
    assert.equal(env['RAFTLOCK_LOCKS'], 'cli/accounts/2 cli/accounts/1');
    assert.equal(env['RAFTLOCK_LOCK_1'], 'cli/accounts/2');
    assert.equal(env['RAFTLOCK_LOCK_2'], 'cli/accounts/1');
    assert.match(env['RAFTLOCK_FENCING_TOKEN_1'] ?? '', /^\d+$/);
    assert.equal(Number(env['RAFTLOCK_FENCING_TOKEN_1']), Number(env['RAFTLOCK_FENCING_TOKEN_2']) + 1, 'consecutive tokens in name order: accounts/1 first');
    assert.ok(env['RAFTLOCK_SESSION_ID']);
    assert.equal(env['RAFTLOCK_FENCING_TOKEN'], undefined, 'no single token for several locks');
    // both free again, and two commands in opposite order both run
    const sleep = 'setTimeout(() => {}, 300)';
    const [a, b] = await Promise.all([
      raftlock(['lock', 'cli/accounts/1', 'cli/accounts/2', ...ep, '--wait', '20s', '--', process.execPath, '-e', sleep]),
      raftlock(['lock', 'cli/accounts/2', 'cli/accounts/1', ...ep, '--wait', '20s', '--', process.execPath, '-e', sleep]),
    ]);
    assert.deepEqual([a.code, b.code], [0, 0], `${a.stderr} ${b.stderr}`);
  });

  it('lock runs the command with the token in its env, releases, and returns its exit code', async () => {
    const out = join(dir, 'plain');
    const r = await raftlock(['lock', 'jobs/nightly', ...ep, '--ttl', '5s', '--', process.execPath, '-e', CHILD, out, '7']);
    assert.equal(r.code, 7, r.stderr);
    const env = JSON.parse(readFileSync(`${out}.env`, 'utf8')) as { token: string; session: string; lock: string };
    assert.match(env.token, /^[1-9]\d*$/);
    assert.match(env.session, /^[A-Za-z0-9._~-]+$/);
    assert.equal(env.lock, 'jobs/nightly');
    const get = await raftlock(['get', 'jobs/nightly', ...ep, '--json']);
    assert.equal(get.code, 0, get.stderr);
    assert.equal(JSON.parse(get.stdout).held, false, 'released after the command exited');
    const ok = await raftlock(['lock', 'jobs/nightly', ...ep, '--', process.execPath, '-e', CHILD, join(dir, 'second'), '0']);
    assert.equal(ok.code, 0, ok.stderr);
    assert.ok(Number(JSON.parse(readFileSync(join(dir, 'second.env'), 'utf8')).token) > Number(env.token), 'a later grant has a larger token');
  });

  it('lock exits 1 with one line on stderr when the lock stays held; 127 when the command is missing', async () => {
    const a = await raftlock(['acquire', 'busy', ...ep, '--ttl', '30s', '--json']);
    assert.equal(a.code, 0, a.stderr);
    const grant = JSON.parse(a.stdout) as { sessionId: string; fencingToken: number };
    const r = await raftlock(['lock', 'busy', ...ep, '--wait', '200ms', '--', process.execPath, '-e', CHILD, join(dir, 'never'), '0']);
    assert.equal(r.code, 1);
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
    assert.match(r.stderr, /^raftlock lock: http:\/\/127\.0\.0\.1:\d+: .*held.*--wait/);
    assert.ok(r.stderr.includes(grant.sessionId));
    assert.equal(existsSync(join(dir, 'never.env')), false, 'the command never ran');
    const missing = await raftlock(['lock', 'free-one', ...ep, '--', join(dir, 'no-such-binary')]);
    assert.equal(missing.code, 127);
    assert.match(missing.stderr, /cannot run/);
  });

  it('lock kills the command (SIGTERM, then SIGKILL) when the lock is lost, before the ttl passes', async () => {
    const out = join(dir, 'lost');
    const ttlMs = 2000;
    let child: ChildProcess | undefined;
    const run = raftlock(['lock', 'fragile', ...ep, '--ttl', `${ttlMs}ms`, '--kill-grace', '2s', '--', process.execPath, '-e', CHILD, out, 'stubborn'], { onSpawn: (p) => (child = p) });
    await eventually(async () => existsSync(`${out}.env`), 10_000, 'the command to start');
    assert.ok(child);
    for (const n of h.nodes) h.pause(n.id);
    const pausedAt = Date.now();
    let r: Run;
    try {
      r = await run;
    } finally {
      for (const n of h.nodes) h.resume(n.id);
    }
    assert.equal(r.code, 4, r.stderr);
    assert.match(r.stderr, /LOST fragile/);
    const termAt = Number(readFileSync(`${out}.term`, 'utf8'));
    assert.ok(termAt - pausedAt < ttlMs, `SIGTERM came ${termAt - pausedAt} ms after the cluster stopped (ttl ${ttlMs})`);
    assert.match(r.stderr, /SIGKILL/, 'the stubborn command was killed');
  });

  it('semaphore holds permits while the command runs (token in its env), returns its code; full exits 1, another limit exits 2, both with one line', async () => {
    const semInUse = async (name: string): Promise<number> => {
      const r = await fetch(`${h.endpoints[0]}/v1/semaphores/${encodeURIComponent(name)}`);
      return (await r.json() as { in_use: number }).in_use;
    };
    const out = join(dir, 'sem');
    const r = await raftlock(['semaphore', 'jobs/pool', ...ep, '--limit', '3', '--permits', '2', '--', process.execPath, '-e', CHILD, out, '5']);
    assert.equal(r.code, 5, r.stderr);
    const env = JSON.parse(readFileSync(`${out}.env`, 'utf8')) as { token: string; session: string; semaphore: string; permits: string; lock?: string };
    assert.match(env.token, /^[1-9]\d*$/);
    assert.match(env.session, /^[A-Za-z0-9._~-]+$/);
    assert.equal(env.semaphore, 'jobs/pool');
    assert.equal(env.permits, '2');
    assert.equal(env.lock, undefined);
    assert.equal(await semInUse('jobs/pool'), 0, 'the permits were given back after the command exited');

    const holder = join(dir, 'sem-holder');
    let proc: ChildProcess | undefined;
    const run = raftlock(['semaphore', 'jobs/one', ...ep, '--limit', '1', '--', process.execPath, '-e', CHILD, holder, 'wait'], { onSpawn: (p) => (proc = p) });
    await eventually(async () => existsSync(`${holder}.env`), 10_000, 'the holder to start');
    const full = await raftlock(['semaphore', 'jobs/one', ...ep, '--limit', '1', '--wait', '200ms', '--', process.execPath, '-e', CHILD, join(dir, 'sem-never'), '0']);
    assert.equal(full.code, 1, full.stderr);
    assert.equal(full.stderr.trim().split('\n').length, 1, full.stderr);
    assert.match(full.stderr, /^raftlock semaphore: .*1 of 1 permits in use.*--wait/);
    const mismatch = await raftlock(['semaphore', 'jobs/one', ...ep, '--limit', '4', '--', process.execPath, '-e', CHILD, join(dir, 'sem-never'), '0']);
    assert.equal(mismatch.code, 2, mismatch.stderr);
    assert.match(mismatch.stderr, /--limit 1/);
    const usage = await raftlock(['semaphore', 'jobs/one', ...ep, '--', process.execPath, '-e', CHILD, join(dir, 'sem-never'), '0']);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /--limit is required/);
    assert.equal(existsSync(join(dir, 'sem-never.env')), false, 'the command never ran');
    proc!.kill('SIGTERM');
    assert.equal((await run).code, 0);
    assert.equal(await semInUse('jobs/one'), 0);
  });

  it('ls shows locks with their mode and every holder, and semaphores with in-use/limit, holders and how many wait (text and --json); get shows a shared lock', async () => {
    type Answer = { status: number; body: Record<string, unknown> };
    const call = async (method: string, path: string, body?: unknown): Promise<Answer> => {
      const r = await fetch(`${h.endpoints[0]}${path}`, { method, ...(body !== undefined ? { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) } : {}) });
      return { status: r.status, body: (await r.json()) as Record<string, unknown> };
    };
    const ok = (a: Answer): Record<string, unknown> => {
      assert.ok(a.status >= 200 && a.status < 300, `${a.status} ${JSON.stringify(a.body)}`);
      return a.body;
    };
    const r1 = ok(await call('POST', '/v1/locks/lsx%2Fdoc/acquire', { mode: 'shared', owner: 'r1', ttl_ms: 90_000 }));
    const r2 = ok(await call('POST', '/v1/locks/lsx%2Fdoc/acquire', { mode: 'shared', owner: 'r2', ttl_ms: 90_000 }));
    const w = ok(await call('POST', '/v1/locks/lsx%2Fsolo/acquire', { owner: 'w', ttl_ms: 90_000 }));
    const p1 = ok(await call('POST', '/v1/semaphores/lsx%2Fpool/acquire', { limit: 3, permits: 2, owner: 'p1', ttl_ms: 90_000 }));
    const p2 = ok(await call('POST', '/v1/sessions', { ttl_ms: 90_000, owner: 'p2' }));
    const waiting = call('POST', '/v1/semaphores/lsx%2Fpool/acquire', { session_id: p2['session_id'], limit: 3, permits: 2, wait_ms: 60_000 });
    await eventually(async () => ((await call('GET', '/v1/semaphores/lsx%2Fpool')).body['waiters'] as unknown[]).length === 1, 10_000, 'p2 to queue');

    const ls = await raftlock(['ls', ...ep, '--prefix', 'lsx/']);
    assert.equal(ls.code, 0, ls.stderr);
    const row = (...cells: unknown[]): RegExp => new RegExp(`^${cells.map((c) => String(c).replace(/[/.]/g, '\\$&')).join('\\s+')}$`, 'm');
    assert.match(ls.stdout, /^LOCK\s+MODE\s+TOKEN\s+SESSION\s+OWNER\s+WAITERS$/m);
    assert.match(ls.stdout, row('lsx/doc', 'shared', r1['fencing_token'], r1['session_id'], 'r1', 0));
    assert.match(ls.stdout, row('lsx/doc', 'shared', r2['fencing_token'], r2['session_id'], 'r2', 0));
    assert.match(ls.stdout, row('lsx/solo', 'exclusive', w['fencing_token'], w['session_id'], 'w', 0));
    assert.match(ls.stdout, /^SEMAPHORE\s+IN USE\s+PERMITS\s+TOKEN\s+SESSION\s+OWNER\s+WAITING$/m);
    assert.match(ls.stdout, row('lsx/pool', '2/3', 2, p1['fencing_token'], p1['session_id'], 'p1', 1));
    const js = await raftlock(['ls', ...ep, '--prefix', 'lsx/', '--json']);
    const parsed = JSON.parse(js.stdout) as { locks: { name: string; mode: string; holders: unknown[] }[]; semaphores: { name: string; inUse: number; limit: number; waiters: { owner: string; position: number }[] }[] };
    assert.deepEqual(parsed.locks.map((l) => [l.name, l.mode, l.holders.length]), [['lsx/doc', 'shared', 2], ['lsx/solo', 'exclusive', 1]]);
    assert.deepEqual(parsed.semaphores.map((s) => [s.name, s.inUse, s.limit, s.waiters.map((x) => [x.owner, x.position])]), [['lsx/pool', 2, 3, [['p2', 1]]]]);
    const get = await raftlock(['get', 'lsx/doc', ...ep]);
    assert.match(get.stdout, new RegExp(`^lsx/doc: held shared by 2 sessions: ${String(r1['session_id'])} \\(owner r1\\) token ${String(r1['fencing_token'])}, ${String(r2['session_id'])}`));

    // p2 gives up: its release withdraws the queued wait (docs/api.md "Release")
    assert.equal((await call('POST', '/v1/semaphores/lsx%2Fpool/release', { session_id: p2['session_id'] })).status, 409);
    const gaveUp = await waiting;
    assert.equal(gaveUp.status, 409);
    assert.equal((gaveUp.body['error'] as { code: string }).code, 'semaphore_full');
    for (const s of [r1, r2, w, p1, p2]) assert.equal((await call('DELETE', `/v1/sessions/${String(s['session_id'])}`)).status, 200);
    assert.deepEqual((await call('GET', '/v1/semaphores?prefix=lsx/')).body, { semaphores: [] }, 'nobody was granted what p2 gave up');
  });

  it('elect runs the command while leader (token and value in its env); leader shows it; a second candidate exits 1 naming the leader; --value is required', async () => {
    const out = join(dir, 'elect');
    let proc: ChildProcess | undefined;
    const run = raftlock(['elect', 'svc/sched', ...ep, '--value', 'host-a:8080', '--', process.execPath, '-e', CHILD, out, 'wait'], { onSpawn: (p) => (proc = p) });
    await eventually(async () => existsSync(`${out}.env`), 10_000, 'the leader to start');
    const env = JSON.parse(readFileSync(`${out}.env`, 'utf8')) as { token: string; session: string; election: string; value: string; lock?: string };
    assert.match(env.token, /^[1-9]\d*$/);
    assert.deepEqual([env.election, env.value, env.lock], ['svc/sched', 'host-a:8080', undefined]);
    const shown = await raftlock(['leader', 'svc/sched', ...ep]);
    assert.equal(shown.code, 0, shown.stderr);
    assert.equal(shown.stdout.trim(), `svc/sched: led by session ${env.session}, fencing token ${env.token}, value "host-a:8080"`);
    const json = await raftlock(['leader', 'svc/sched', ...ep, '--json']);
    assert.deepEqual(JSON.parse(json.stdout), { name: 'svc/sched', leader: { sessionId: env.session, value: 'host-a:8080', fencingToken: Number(env.token) } });
    const second = await raftlock(['elect', 'svc/sched', ...ep, '--value', 'host-b', '--wait', '200ms', '--', process.execPath, '-e', CHILD, join(dir, 'elect-never'), '0']);
    assert.equal(second.code, 1, second.stderr);
    assert.equal(second.stderr.trim().split('\n').length, 1, second.stderr);
    assert.match(second.stderr, /^raftlock elect: .*leader: session .*value "host-a:8080".*--wait/);
    const usage = await raftlock(['elect', 'svc/sched', ...ep, '--', process.execPath, '-e', CHILD, join(dir, 'elect-never'), '0']);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /--value is required/);
    assert.equal(existsSync(join(dir, 'elect-never.env')), false, 'no second leader ever ran');
    proc!.kill('SIGTERM');
    assert.equal((await run).code, 0);
    const none = await raftlock(['leader', 'svc/sched', ...ep]);
    assert.equal(none.code, 1);
    assert.equal(none.stdout.trim(), 'svc/sched: no leader');
  });

  it('elect resigns when the command exits (after a forwarded SIGTERM too): the waiting candidate leads at once; a revoked leader\'s command is stopped (exit 4)', async () => {
    const c = new RaftlockClient({ endpoints: h.endpoints });
    const ac = new AbortController();
    const events: WatchEvent[] = [];
    let synced = false;
    const feed = (async () => {
      try {
        for await (const e of c.watch('svc/handover', { signal: ac.signal })) {
          if (e.event === 'synced') synced = true;
          else if (e.event !== 'state') events.push(e);
        }
      } catch {
        /* aborted at the end */
      }
    })();
    try {
      // every event from here on is in the feed
      await eventually(async () => synced, 10_000, 'the watch to open');
      const outA = join(dir, 'handover-a');
      const outB = join(dir, 'handover-b');
      let procA: ChildProcess | undefined;
      const runA = raftlock(['elect', 'svc/handover', ...ep, '--value', 'a', '--', process.execPath, '-e', CHILD, outA, 'wait'], { onSpawn: (p) => (procA = p) });
      await eventually(async () => existsSync(`${outA}.env`), 10_000, 'the first leader to start');
      const envA = JSON.parse(readFileSync(`${outA}.env`, 'utf8')) as { token: string; session: string };
      const runB = raftlock(['elect', 'svc/handover', ...ep, '--value', 'b', '--wait', '20s', '--', process.execPath, '-e', CHILD, outB, '0']);
      await eventually(async () => (await c.getLock('svc/handover')).waiters === 1, 10_000, 'the second candidate to queue');
      procA!.kill('SIGTERM');
      assert.equal((await runA).code, 0);
      assert.ok(existsSync(`${outA}.term`), 'the leader\'s command got SIGTERM');
      const rb = await runB;
      assert.equal(rb.code, 0, rb.stderr);
      const envB = JSON.parse(readFileSync(`${outB}.env`, 'utf8')) as { token: string; session: string };
      assert.ok(Number(envB.token) > Number(envA.token));
      await eventually(async () => events.filter((e) => e.event === 'resigned').length === 2, 10_000, 'both resignations in the feed');
      const a = events.filter((e) => e.session_id === envA.session).map((e) => e.event);
      assert.deepEqual(a, ['acquired', 'resigned'], `A's events (a closed session would show released): ${JSON.stringify(events)}`);
      const handover = events.findIndex((e) => e.event === 'resigned' && e.session_id === envA.session);
      assert.deepEqual([events[handover + 1]?.event, events[handover + 1]?.session_id, events[handover + 1]?.index], ['acquired', envB.session, events[handover]!.index], 'B leads in the same command as A resigned');
      assert.deepEqual(events.filter((e) => e.session_id === envB.session).map((e) => e.event), ['waiting', 'acquired', 'resigned']);
      for (const sid of [envA.session, envB.session]) await assert.rejects(c.getSession(sid), /session/i, 'elect closed the session it opened');

      // leadership lost while the command runs: an administrator revokes it
      const outC = join(dir, 'revoked-leader');
      // a grace the loaded machine can keep: the child must run its SIGTERM handler before
      // the SIGKILL (CI once saw 300 ms pass without it)
      const runC = raftlock(['elect', 'svc/revoked', ...ep, '--value', 'c', '--ttl', '1500ms', '--kill-grace', '2s', '--', process.execPath, '-e', CHILD, outC, 'stubborn']);
      await eventually(async () => existsSync(`${outC}.env`), 10_000, 'the leader to start');
      const rev = await raftlock(['revoke', 'svc/revoked', ...ep]);
      assert.equal(rev.code, 0, rev.stderr);
      const rc = await runC;
      assert.equal(rc.code, 4, rc.stderr);
      assert.match(rc.stderr, /LOST svc\/revoked/);
      assert.ok(existsSync(`${outC}.term`), 'the command got SIGTERM');

      // --max-hold bounds the leadership: the command is stopped before the server ends it
      const outD = join(dir, 'max-hold-leader');
      const started = Date.now();
      const rd = await raftlock(['elect', 'svc/bounded', ...ep, '--value', 'd', '--ttl', '3s', '--max-hold', '1500ms', '--kill-grace', '2s', '--', process.execPath, '-e', CHILD, outD, 'wait']);
      assert.equal(rd.code, 4, rd.stderr);
      assert.match(rd.stderr, /LOST svc\/bounded/);
      assert.ok(existsSync(`${outD}.term`), 'the command got SIGTERM');
      assert.ok(Date.now() - started < 1500 + 5000, `stopped ${Date.now() - started} ms after start: by the max hold`);
    } finally {
      ac.abort();
      await feed;
      await c.close();
    }
  });

  it('forwards SIGTERM to the command and exits with its code', async () => {
    const out = join(dir, 'fwd');
    let proc: ChildProcess | undefined;
    const run = raftlock(['lock', 'forwarded', ...ep, '--', process.execPath, '-e', CHILD, out, 'wait'], { onSpawn: (p) => (proc = p) });
    await eventually(async () => existsSync(`${out}.env`), 10_000, 'the command to start');
    proc!.kill('SIGTERM');
    const r = await run;
    assert.equal(r.code, 0, r.stderr);
    assert.ok(existsSync(`${out}.term`), 'the command got SIGTERM');
    const get = await raftlock(['get', 'forwarded', ...ep, '--json']);
    assert.equal(JSON.parse(get.stdout).held, false);
  });

  it('one-shots: session open, acquire, get, ls, check, renew, release, session close (--json, exit codes)', async () => {
    const open = await raftlock(['session', 'open', ...ep, '--ttl', '30s', '--owner', 'script', '--json']);
    assert.equal(open.code, 0, open.stderr);
    const { sessionId, ttlMs } = JSON.parse(open.stdout) as { sessionId: string; ttlMs: number };
    assert.equal(ttlMs, 30_000);
    const acq = await raftlock(['acquire', 'one/shot', ...ep, '--session', sessionId, '--json']);
    assert.equal(acq.code, 0, acq.stderr);
    const token = (JSON.parse(acq.stdout) as { fencingToken: number }).fencingToken;
    const get = await raftlock(['get', 'one/shot', ...ep]);
    assert.match(get.stdout, new RegExp(`held by session ${sessionId} \\(owner script\\), fencing token ${token}`));
    const ls = await raftlock(['ls', ...ep, '--prefix', 'one/', '--json']);
    assert.deepEqual((JSON.parse(ls.stdout) as { locks: { name: string }[] }).locks.map((l) => l.name), ['one/shot']);
    assert.equal((await raftlock(['check', 'one/shot', ...ep, '--fencing-token', String(token)])).code, 0);
    assert.equal((await raftlock(['renew', 'one/shot', ...ep, '--session', sessionId])).code, 0);
    assert.equal((await raftlock(['session', 'keepalive', sessionId, ...ep])).code, 0);
    const held = await raftlock(['acquire', 'one/shot', ...ep, '--json']);
    assert.equal(held.code, 1);
    assert.equal(JSON.parse(held.stdout).error.code, 'lock_held');
    assert.equal((await raftlock(['release', 'one/shot', ...ep, '--session', sessionId, '--fencing-token', String(token)])).code, 0);
    const check = await raftlock(['check', 'one/shot', ...ep, '--fencing-token', String(token)]);
    assert.equal(check.code, 1, 'a released token is not current');
    assert.equal((await raftlock(['release', 'one/shot', ...ep, '--session', sessionId])).code, 1, 'not holder');
    const close = await raftlock(['session', 'close', sessionId, ...ep, '--json']);
    assert.equal(close.code, 0, close.stderr);
    const gone = await raftlock(['session', 'keepalive', sessionId, ...ep]);
    assert.equal(gone.code, 4);
    assert.match(gone.stderr, /open a new one/);
  });

  it('--idempotency-key reused for another lock or a release: exit 7, one line saying so, nothing done; the same command again prints its first answer', async () => {
    const key = `job-${Date.now()}`;
    const first = await raftlock(['acquire', 'cli/bound/a', ...ep, '--ttl', '30s', '--idempotency-key', key, '--json']);
    assert.equal(first.code, 0, first.stderr);
    const grant = JSON.parse(first.stdout) as { sessionId: string; fencingToken: number };
    const other = await raftlock(['acquire', 'cli/bound/b', ...ep, '--ttl', '30s', '--idempotency-key', key, '--json']);
    assert.equal(other.code, 7, other.stderr);
    assert.equal(other.stderr.trim().split('\n').length, 1);
    assert.match(other.stderr, new RegExp(`^raftlock acquire: .*first used for another request \\(another name\\).*--idempotency-key ${key} belongs to an earlier, different command: nothing was done`));
    assert.equal(JSON.parse(other.stdout).error.code, 'idempotency_key_reused');
    const rel = await raftlock(['release', 'cli/bound/a', ...ep, '--session', grant.sessionId, '--idempotency-key', key]);
    assert.equal(rel.code, 7, rel.stderr);
    assert.match(rel.stderr, /another operation/);
    const again = await raftlock(['acquire', 'cli/bound/a', ...ep, '--ttl', '30s', '--idempotency-key', key, '--json']);
    assert.equal(again.code, 0, again.stderr);
    assert.deepEqual(JSON.parse(again.stdout), JSON.parse(first.stdout), 'the first answer');
    const get = await raftlock(['get', 'cli/bound/b', ...ep, '--json']);
    assert.equal((JSON.parse(get.stdout) as { held: boolean }).held, false);
  });

  it('status prints every member; usage errors exit 2; no cluster exits 3 with one line', async () => {
    const st = await raftlock(['status', ...ep, '--json']);
    assert.equal(st.code, 0, st.stderr);
    const s = JSON.parse(st.stdout) as { leaderId: string; members: { id: string; role: string }[] };
    assert.deepEqual(s.members.map((m) => m.id).sort(), ['n1', 'n2', 'n3']);
    assert.equal(s.members.filter((m) => m.role === 'leader').length, 1);
    const table = await raftlock(['status', ...ep]);
    assert.match(table.stdout, /^leader: n\d {2}term: \d+\nMEMBER +ROLE +TERM +COMMIT +APPLIED +LAG +API/);
    assert.equal((await raftlock(['acquire', 'x', ...ep, '--wait', 'soon'])).code, 2);
    assert.equal((await raftlock(['acquire', ...ep])).code, 2);
    assert.equal((await raftlock(['acquire', 'bad name!', ...ep])).code, 2);
    const dead = `http://127.0.0.1:${await freePort()}`;
    const down = await raftlock(['get', 'x', '--endpoints', dead, '--retry-for', '300ms']);
    assert.equal(down.code, 3);
    assert.equal(down.stderr.trim().split('\n').length, 1);
    assert.match(down.stderr, /ECONNREFUSED.*raftlock status/);
  });
});

describe('raftlock CLI leader routing (three fake nodes, docs/client.md "Leader routing")', () => {
  const servers: import('node:http').Server[] = [];
  after(async () => {
    await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  });

  /** three stateless fake nodes answering what `raftlock lock` asks; each names eps[1] as leader */
  async function fakeCluster(): Promise<{ eps: string[]; hits: string[] }> {
    const { createServer } = await import('node:http');
    const eps: string[] = [];
    const hits: string[] = [];
    for (let i = 0; i < 3; i++) {
      const srv = createServer((req, res) => {
        req.resume();
        req.on('end', () => {
          hits.push(eps[i]!);
          const url = req.url ?? '';
          const body = req.method === 'DELETE' ? { released: [] } : url === '/v1/sessions' ? { session_id: 's1', ttl_ms: 60_000 }
            : url.endsWith('/acquire') ? { name: 'routed', session_id: 's1', fencing_token: 9, ttl_ms: 60_000 } : url.endsWith('/release') ? { name: 'routed', released: true } : { session_id: 's1', ttl_ms: 60_000 };
          res.writeHead(url === '/v1/sessions' && req.method === 'POST' ? 201 : 200, { 'content-type': 'application/json', 'x-raftlock-leader': eps[1]! });
          res.end(JSON.stringify(body));
        });
      });
      srv.keepAliveTimeout = 100;
      servers.push(srv);
      const port = await freePort();
      await new Promise<void>((r) => srv.listen(port, '127.0.0.1', r));
      eps.push(`http://127.0.0.1:${port}`);
    }
    return { eps, hits };
  }

  it('sends every call after the first to the leader the answers name; --no-leader-routing and RAFTLOCK_LEADER_ROUTING=off spread them', async () => {
    for (const how of ['on', 'flag', 'env'] as const) {
      const { eps, hits } = await fakeCluster();
      const args = ['lock', 'routed', '--endpoints', eps.join(','), ...(how === 'flag' ? ['--no-leader-routing'] : []), '--', process.execPath, '-e', 'process.exit(0)'];
      const r = await raftlock(args, how === 'env' ? { env: { RAFTLOCK_LEADER_ROUTING: 'off' } } : {});
      assert.equal(r.code, 0, r.stderr);
      assert.ok(hits.length >= 3, `open, acquire, and release or close: ${hits.length} calls`);
      if (how === 'on') assert.deepEqual(hits.slice(1), hits.slice(1).map(() => eps[1]), `after the first answer every call goes to the leader: ${hits.join(' ')}`);
      else for (let k = 1; k < hits.length; k++) assert.notEqual(hits[k], hits[k - 1], `${how}: consecutive calls rotate: ${hits.join(' ')}`);
    }
    const bad = await raftlock(['ls', '--endpoints', 'http://127.0.0.1:1'], { env: { RAFTLOCK_LEADER_ROUTING: 'maybe' } });
    assert.equal(bad.code, 2, 'a bad RAFTLOCK_LEADER_ROUTING is a usage error');
    assert.match(bad.stderr, /RAFTLOCK_LEADER_ROUTING: expected on or off/);
  });
});
