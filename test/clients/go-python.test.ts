// The Go and Python clients (clients/go, clients/python) against a real 3-node cluster
// (ClusterHarness; removed in `after`, also on failure): `go vet`, `go test ./...` and
// `python3 -m unittest` with RAFTLOCK_TEST_ENDPOINTS set (their unit tests on stub servers
// and their integration tests on this cluster), etcd's billing example ported by its
// imports (examples/go/billing), and Go, Python and TypeScript workers incrementing one
// fenced counter under one lock, also while the leader is killed. Skips with one line when go or python3 cannot be had
// (scripts/install-test-deps.sh installs Debian's golang-go as root).
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync, type ChildProcess } from 'node:child_process';
import { accessSync, constants, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ClusterHarness, eventually, repoRoot } from '../support/cluster-harness.js';
import { RaftlockClient } from '@raftlock/client';
import { killGroup, runToEnd, type Run } from '../support/run-to-end.js';

const GO_DIR = join(repoRoot, 'clients', 'go');
const PY_DIR = join(repoRoot, 'clients', 'python');
const EXAMPLES_GO_DIR = join(repoRoot, 'examples', 'go');

function has(cmd: string, args: string[]): boolean {
  const r = spawnSync(cmd, args, { stdio: 'ignore' });
  return r.status === 0;
}
/** `nice -n 10` when the machine has it (coreutils), else the command as is */
const NICE = has('nice', ['true']) ? 'nice' : 'env';
const NICE_ARGS = NICE === 'nice' ? ['-n', '10'] : [];
const missing = [has('go', ['version']) ? '' : 'go', has('python3', ['--version']) ? '' : 'python3'].filter(Boolean);
const skip = missing.length === 0 ? false : `${missing.join(' and ')} not found (scripts/install-test-deps.sh installs Debian's golang-go as root): skipping the Go and Python client tests`;
if (skip) console.log(`# ${skip}`);

/** go never touches the network (no dependencies); a build cache where it can write */
function goEnv(): Record<string, string> {
  const env: Record<string, string> = { GOTOOLCHAIN: 'local', GOPROXY: 'off', GOFLAGS: '', GONOSUMDB: '', GOWORK: 'off' };
  let homeWritable = false;
  try {
    accessSync(process.env.HOME ?? '/nonexistent', constants.W_OK);
    homeWritable = true;
  } catch {
    /* e.g. a CI user without a home */
  }
  if (!homeWritable) {
    const dir = join(repoRoot, '.cache', 'go'); // ignored by git; kept between runs for speed
    mkdirSync(dir, { recursive: true });
    env.GOCACHE = join(dir, 'build');
    env.GOPATH = join(dir, 'path');
  }
  return env;
}

const running = new Set<ChildProcess>();
/** set by `after`: nothing new starts once cleanup began */
let stopping = false;

/** Runs a command to its end; killed (and failed) after timeoutMs. */
function run(cmd: string, args: string[], o: { cwd: string; env: Record<string, string>; timeoutMs: number }): Promise<Run> {
  if (stopping) return Promise.reject(new Error(`${cmd} ${args.join(' ')} not started: the suite is being cleaned up`));
  return runToEnd(cmd, args, { cwd: o.cwd, env: { ...process.env, ...o.env }, timeoutMs: o.timeoutMs, running });
}

function assertOk(r: Run, what: string): void {
  assert.equal(r.code, 0, `${what} exited ${r.code}\nstdout:\n${r.stdout.slice(-4000)}\nstderr:\n${r.stderr.slice(-4000)}`);
}

/** A resource that refuses stale writers: every write must carry a token above the
 *  highest seen and the value read under the lock + 1 (a lost update shows as a value
 *  that is not current + 1). */
class FencedCounter {
  value = 0;
  highest = 0;
  readonly writes: { worker: string; token: number; value: number }[] = [];
  readonly refused: string[] = [];
  private server: Server | null = null;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const send = (status: number, body: unknown): void => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      if (req.method === 'GET' && req.url === '/value') return send(200, { value: this.value });
      if (req.method !== 'POST' || req.url !== '/write') return send(404, {});
      let raw = '';
      req.on('data', (c: Buffer) => (raw += c.toString()));
      req.on('end', () => {
        let w: { value?: unknown; token?: unknown; worker?: unknown };
        try {
          w = JSON.parse(raw) as typeof w;
        } catch {
          return send(400, {});
        }
        if (typeof w.value !== 'number' || typeof w.token !== 'number' || typeof w.worker !== 'string') return send(400, {});
        if (w.token <= this.highest || w.value !== this.value + 1) {
          this.refused.push(`${w.worker}: token ${w.token} (highest ${this.highest}), value ${w.value} (current ${this.value})`);
          return send(409, { error: 'stale' });
        }
        this.highest = w.token;
        this.value = w.value;
        this.writes.push({ worker: w.worker, token: w.token, value: w.value });
        send(200, { value: this.value });
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    const addr = this.server.address();
    if (addr === null || typeof addr === 'string') throw new Error('counter has no port');
    this.url = `http://127.0.0.1:${addr.port}`;
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

/** A run that is started now and awaited later: its failure never goes unhandled. */
type Pending = Promise<{ ok: Run } | { err: unknown }>;
function start(cmd: string, args: string[], o: { cwd: string; env: Record<string, string>; timeoutMs: number }): Pending {
  return run(cmd, args, o).then((ok) => ({ ok }), (err: unknown) => ({ err }));
}
async function finished(p: Pending | undefined, what: string): Promise<Run> {
  assert.ok(p, `${what} was never started (the cluster did not come up?)`);
  const r = await p;
  if ('err' in r) throw r.err;
  assertOk(r.ok, what);
  return r.ok;
}

describe('Go and Python clients against a real 3-node cluster', { skip, timeout: 240_000 }, () => {
  let h: ClusterHarness;
  let tmp: string;
  const counter = new FencedCounter();
  const counter2 = new FencedCounter();
  // The clients' own environment variables must not redirect the stub-server unit tests.
  const env: Record<string, string> = { ...goEnv(), RAFTLOCK_ENDPOINTS: '', RAFTLOCK_TOKEN: '', RAFTLOCK_CA_FILE: '', PYTHONDONTWRITEBYTECODE: '1' };
  const pending: Record<string, Pending> = {};

  before(async () => {
    tmp = mkdtempSync(join(tmpdir(), 'raftlock-clients-'));
    // What needs no cluster runs while the cluster starts: one step at a time and niced, so
    // the compilers do not starve the nodes' first election on a loaded machine. The suites
    // then run side by side (most of their time is timers: keepalive periods, expiries).
    const build = { env, timeoutMs: 120_000 };
    const steps: [string, string, string[]][] = [
      ['vetGo', GO_DIR, ['vet', './...']],
      ['vetExamples', EXAMPLES_GO_DIR, ['vet', './...']],
      ['billing', EXAMPLES_GO_DIR, ['build', '-o', join(tmp, 'billing'), './billing']],
      ['worker', GO_DIR, ['build', '-o', join(tmp, 'fenced-worker'), './internal/cmd/fenced-worker']],
    ];
    let prev: Pending = Promise.resolve({ ok: { code: 0, signal: null, stdout: '', stderr: '' } });
    for (const [key, cwd, args] of steps) {
      prev = prev.then(() => start(NICE, [...NICE_ARGS, 'go', ...args], { cwd, ...build }));
      pending[key] = prev;
    }
    h = await ClusterHarness.create();
    h.startAll();
    await h.waitForLeader(60_000);
    env.RAFTLOCK_TEST_ENDPOINTS = h.endpoints.join(',');
    pending.goTest = start('go', ['test', '-count=1', '-v', './...'], { cwd: GO_DIR, env, timeoutMs: 120_000 });
    pending.pyTest = start('python3', ['-m', 'unittest', '-v'], { cwd: PY_DIR, env, timeoutMs: 120_000 });
    await counter.start();
    await counter2.start();
  });
  after(async () => {
    stopping = true;
    for (const p of running) killGroup(p);
    await Promise.all(Object.values(pending)); // every child has ended (killed above if still running)
    await counter.close();
    await counter2.close();
    await h?.close();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  it('go vet is clean and go test ./... passes (unit tests and the integration tests on this cluster)', async () => {
    await finished(pending.vetGo, 'go vet ./... (clients/go)');
    await finished(pending.vetExamples, 'go vet ./... (examples/go)');
    const r = await finished(pending.goTest, 'go test ./...');
    assert.match(r.stdout, /--- PASS: TestIntegrationMutualExclusionAndIncreasingTokens/, 'the integration tests ran against the cluster');
    assert.doesNotMatch(r.stdout, /--- SKIP/, 'a Go test was skipped');
  });

  it('python3 -m unittest passes (unit tests and the integration tests on this cluster)', async () => {
    const r = await finished(pending.pyTest, 'python3 -m unittest');
    assert.match(r.stderr, /test_mutual_exclusion_and_increasing_tokens .* ok/, 'the integration tests ran against the cluster');
    assert.doesNotMatch(r.stderr, /skipped 'integration/, 'the integration tests were skipped');
  });

  it("etcd's billing example, ported by its imports, runs against raftlock", async () => {
    await finished(pending.billing, 'go build ./billing');
    // Its endpoint is etcd's 127.0.0.1:2379 in the source; RAFTLOCK_ENDPOINTS points it here.
    const r = await run(join(tmp, 'billing'), [], { cwd: tmp, env: { RAFTLOCK_ENDPOINTS: h.endpoints.join(',') }, timeoutMs: 30_000 });
    assertOk(r, 'the billing example');
    assert.match(r.stdout, /Lock adquirido com sucesso\. Executando tarefa crítica\.\.\.\nLock liberado com segurança\.\n/);
    const c = new RaftlockClient({ endpoints: h.endpoints });
    try {
      assert.equal((await c.getLock('/faturamento-lock')).held, false, 'the example released its lock');
    } finally {
      await c.close();
    }
  });

  /** Go, Python and TypeScript workers, ROUNDS increments each, on `c`; `meanwhile` runs
   *  beside them (e.g. a fault once some writes landed). */
  async function crossLanguage(c: FencedCounter, rounds: number, meanwhile?: () => Promise<void>): Promise<void> {
    const name = `cross-lang/counter-${Date.now()}`;
    const goBin = join(tmp, 'fenced-worker');
    await finished(pending.worker, 'go build fenced-worker');
    const workerEnv = (id: string): Record<string, string> => ({ ...env, COUNTER_URL: c.url, LOCK_NAME: name, WORKER_ID: id, ROUNDS: String(rounds) });
    const tsWorker = async (): Promise<void> => {
      const client = new RaftlockClient({ endpoints: h.endpoints });
      const s = await client.session({ ttlMs: 5000, owner: 'ts' });
      try {
        for (let i = 0; i < rounds; i++) {
          const lock = await s.lock(name, { waitMs: 30_000 });
          const { value } = (await (await fetch(`${c.url}/value`)).json()) as { value: number };
          lock.assertHeld();
          const res = await fetch(`${c.url}/write`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ value: value + 1, token: lock.fencingToken, worker: 'ts' }) });
          assert.equal(res.status, 200, `the counter refused the TypeScript worker's token ${lock.fencingToken}`);
          await lock.release();
        }
      } finally {
        await s.close();
        await client.close();
      }
    };
    const [goRun, pyRun] = await Promise.all([
      run(goBin, [], { cwd: tmp, env: workerEnv('go'), timeoutMs: 60_000 }),
      run('python3', [join(PY_DIR, 'tests', 'fenced_worker.py')], { cwd: PY_DIR, env: workerEnv('python'), timeoutMs: 60_000 }),
      tsWorker(),
      meanwhile?.(),
    ]);
    assertOk(goRun, 'the Go worker');
    assertOk(pyRun, 'the Python worker');
    assert.deepEqual(c.refused, [], 'the counter refused writes');
    assert.equal(c.value, 3 * rounds, 'the counter is exact');
    assert.equal(c.writes.length, 3 * rounds);
    for (let i = 1; i < c.writes.length; i++) assert.ok(c.writes[i]!.token > c.writes[i - 1]!.token, `tokens not increasing: ${c.writes.map((w) => w.token).join(',')}`);
    for (const w of ['go', 'python', 'ts']) assert.equal(c.writes.filter((x) => x.worker === w).length, rounds, `${w} wrote ${rounds} times`);
  }

  it('Go, Python and TypeScript workers increment one fenced counter under one lock: exact, tokens increasing', async () => {
    await crossLanguage(counter, 5);
  });

  it('…and stay exact when the leader is killed mid-run (failover, retries with the same key)', async () => {
    await crossLanguage(counter2, 6, async () => {
      await eventually(async () => counter2.writes.length >= 4, 30_000, 'four writes before the fault');
      const leader = await h.waitForLeader();
      await h.kill(leader);
    });
  });
});
