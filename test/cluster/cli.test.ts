// The `raftlock` command as a user runs it (docs/contract.md §1 "Command line"): `raftlock
// cluster --config FILE` (what `npm start` runs) brings up every node and a leader (on an
// idle machine in about 2.5 s) and Ctrl-C (SIGINT) stops them all, leaving their ports
// free; a bad cluster file makes `raftlock serve` exit 2 with one line on stderr naming the
// field; a data directory in use by a running node makes a second node on it exit with a
// clear line.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ClusterHarness, delay, eventually, freePort } from '../support/cluster-harness.js';
import { runCli, startClusterCommand, type CliRun } from '../support/cluster-command.js';
import { SERVE_MALLOC_ENV, SERVE_NODE_FLAGS } from '../../src/cli/serve-runtime.js';

/** Can we bind this loopback port right now? */
function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

/** pids of live processes whose command line mentions `needle` (Linux /proc; [] elsewhere) */
function processesMentioning(needle: string): number[] {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [];
  }
  const out: number[] = [];
  for (const e of entries) {
    if (!/^\d+$/.test(e) || Number(e) === process.pid) continue;
    try {
      const cmd = readFileSync(`/proc/${e}/cmdline`, 'utf8');
      if (cmd.includes(needle)) out.push(Number(e));
    } catch {
      /* gone */
    }
  }
  return out;
}

/** pids of the `raftlock serve` processes of a cluster file */
function servePids(configPath: string): number[] {
  return processesMentioning(configPath).filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes('serve');
    } catch {
      return false; // exited since
    }
  });
}

/** stderr is exactly one non-empty line, with no stack trace */
function assertOneLine(r: CliRun, mentions: RegExp, what: string): void {
  const ctx = `${what}: exit ${r.code}, stderr ${JSON.stringify(r.stderr)}`;
  assert.equal(r.code, 2, ctx);
  const lines = r.stderr.split('\n').filter((l) => l.trim() !== '');
  assert.equal(lines.length, 1, ctx);
  assert.match(lines[0]!, mentions, ctx);
  assert.doesNotMatch(r.stderr, /\n\s+at .+:\d+:\d+/, `${ctx}: stack trace`);
}

// The bound is against a hang, not a speed claim: five tests of process start-ups (one of them
// a dozen bad cluster files) took 120 s together at load 19, 57 s of it the bad files.
describe('the raftlock command', { timeout: 300_000 }, () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  after(async () => {
    for (const c of cleanups.reverse()) await c();
  });

  /** `raftlock cluster` on a fresh 3-node file (the harness only writes the file: free
   *  ports, a temp data dir), up to its leader line; its node pids, ports, and how long the
   *  leader line took */
  async function startedCluster(): Promise<{ h: ClusterHarness; cmd: ReturnType<typeof startClusterCommand>; ports: number[]; nodePids: number[]; leaderMs: number }> {
    const h = await ClusterHarness.create({ nodes: 3 });
    cleanups.push(() => h.close());
    const ports = h.nodes.flatMap((n) => [Number(new URL(n.api).port), Number(new URL(n.peer).port)]);
    const t0 = Date.now();
    const cmd = startClusterCommand(h.configPath, { killAfterMs: 30_000 });
    cleanups.push(async () => {
      await cmd.stop();
    });
    // The bound is against a hang, not a speed claim. A new cluster's first election needs
    // every voter (docs/membership.md "Bootstrap"), and each node spends ~0.7 s of CPU loading
    // its modules before it listens (1.3-1.9 s for three at once on an idle 2-core machine);
    // in CI, beside two other lanes, the leader line came after 4.7-9.2 s, and once after
    // more than 10.
    await eventually(async () => /leader: n\d \(term \d+\)/.test(cmd.output()), 30_000, () => `a leader line from raftlock cluster (output so far: ${JSON.stringify(cmd.output())})`);
    const leaderMs = Date.now() - t0;
    const nodePids = servePids(h.configPath);
    assert.equal(nodePids.length, 3, 'three serve processes');
    // whatever the test does, no node outlives it (only pids still running this cluster's
    // nodes: an exited node's pid may belong to another process by then)
    cleanups.push(() => {
      for (const pid of servePids(h.configPath)) if (nodePids.includes(pid)) process.kill(pid, 'SIGKILL');
    });
    return { h, cmd, ports, nodePids, leaderMs };
  }

  it('`raftlock cluster --config FILE` elects a leader (within 30 s, against a hang); SIGINT stops every node and frees every port', async (t) => {
    const { h, cmd, ports, nodePids, leaderMs } = await startedCluster();
    t.diagnostic(`raftlock cluster: leader announced ${leaderMs} ms after the command started`);
    // what a person sees: every node's URL, then who leads
    for (const n of h.nodes) assert.ok(cmd.output().includes(`node ${n.id}: ${n.api}`), `the URL of ${n.id} is printed: ${cmd.output()}`);
    // and the nodes agree (the line comes as soon as one node sees a leader; the others may
    // hear from it a heartbeat later on a loaded machine)
    const leader = /leader: (n\d)/.exec(cmd.output())![1];
    await eventually(async () => {
      const views = await Promise.all(h.nodes.map((n) => h.view(n.id)));
      return views.every((v) => v.leader_id === leader);
    }, 10_000, `every node to name ${leader} as the leader`);
    const w = await h.request('n2', 'POST', '/v1/locks/cli/acquire', {});
    assert.equal(w.status, 200, w.text);

    // `raftlock status` against it
    const st = await runCli(['status', '--endpoints', h.endpoints.join(',')]);
    assert.equal(st.code, 0, st.stderr);
    assert.match(st.stdout, new RegExp(`leader: ${leader}`));
    for (const n of h.nodes) assert.match(st.stdout, new RegExp(`^${n.id}\\s+(leader|follower)`, 'm'));

    // the nodes run with the memory settings of src/cli/serve-runtime.ts (docs/operations.md "Memory")
    if (existsSync('/proc/self/environ')) {
      for (const pid of nodePids) {
        const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
        const env = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
        for (const f of SERVE_NODE_FLAGS) assert.ok(argv.includes(f), `node flag ${f} in ${argv.join(' ')}`);
        for (const [k, v] of Object.entries(SERVE_MALLOC_ENV)) assert.ok(env.includes(`${k}=${v}`), `${k}=${v} in the environment of pid ${pid}`);
      }
    }

    // Ctrl-C
    const stopT0 = Date.now();
    const code = await cmd.stop(); // null: it hung and was killed after 30 s
    t.diagnostic(`SIGINT: raftlock cluster exited ${String(code)} after ${Date.now() - stopT0} ms`);
    assert.equal(code, 0, `exit code; output: ${cmd.output()}`);
    assert.match(cmd.output(), /all nodes stopped/);
    for (const p of ports) assert.ok(await portIsFree(p), `port ${p} is still in use after SIGINT`);
    assert.deepEqual(processesMentioning(h.configPath), [], 'node processes outlived raftlock cluster');
  });

  it('a second SIGINT kills every node without waiting for a graceful stop: exit 1, no process and no port left', async () => {
    const { h, cmd, ports, nodePids } = await startedCluster();
    // nodes that cannot finish a graceful stop (stopped: the SIGTERM waits), so only the
    // second signal can end them
    for (const pid of nodePids) process.kill(pid, 'SIGSTOP');
    cmd.signal();
    await eventually(async () => cmd.output().includes('stopping all nodes'), 10_000, () => `the graceful stop to begin (output: ${JSON.stringify(cmd.output())})`);
    cmd.signal();
    const code = await Promise.race([cmd.exited, delay(20_000).then(() => 'hung' as const)]);
    assert.equal(code, 1, `exit code; output: ${cmd.output()}`);
    assert.match(cmd.output(), /stopping now: killing every node/);
    assert.match(cmd.output(), /all nodes killed/);
    assert.deepEqual(processesMentioning(h.configPath), [], 'node processes outlived the second SIGINT');
    for (const p of ports) assert.ok(await portIsFree(p), `port ${p} is still in use after the second SIGINT`);
  });

  it('SIGHUP (the terminal closed) stops every node gracefully, as Ctrl-C does', async () => {
    const { h, cmd, ports } = await startedCluster();
    cmd.signal('SIGHUP');
    const code = await Promise.race([cmd.exited, delay(30_000).then(() => 'hung' as const)]);
    assert.equal(code, 0, `exit code; output: ${cmd.output()}`);
    assert.match(cmd.output(), /all nodes stopped/);
    assert.deepEqual(processesMentioning(h.configPath), [], 'node processes outlived SIGHUP');
    for (const p of ports) assert.ok(await portIsFree(p), `port ${p} is still in use after SIGHUP`);
  });

  it('the launcher killed (SIGKILL, nothing it can catch): its nodes notice, stop on their own and free their ports', async () => {
    const { h, cmd, ports } = await startedCluster();
    cmd.signal('SIGKILL');
    await cmd.exited;
    await eventually(async () => processesMentioning(h.configPath).length === 0, 20_000, () => `the nodes to stop (still running: ${processesMentioning(h.configPath).join(', ')})`);
    for (const p of ports) assert.ok(await portIsFree(p), `port ${p} is still in use after the nodes stopped`);
    // `raftlock cluster` writes each node's log to <data_dir>/<id>.log
    const dataDir = (JSON.parse(readFileSync(h.configPath, 'utf8')) as { data_dir: string }).data_dir;
    for (const n of h.nodes) assert.match(readFileSync(join(dataDir, `${n.id}.log`), 'utf8'), /the launcher of this node\) is gone: stopping/, `${n.id} says why it stopped`);
  });

  it('a bad cluster file: `raftlock serve` exits 2 with one line on stderr naming the field, no stack trace', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'raftlock-cli-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const [a1, p1, a2, p2, a3, p3] = await Promise.all(Array.from({ length: 6 }, () => freePort()));
    const good = {
      cluster: 'cli',
      nodes: [
        { id: 'n1', api: `http://127.0.0.1:${a1}`, peer: `http://127.0.0.1:${p1}` },
        { id: 'n2', api: `http://127.0.0.1:${a2}`, peer: `http://127.0.0.1:${p2}` },
        { id: 'n3', api: `http://127.0.0.1:${a3}`, peer: `http://127.0.0.1:${p3}` },
      ],
      data_dir: join(dir, 'data'),
      election_timeout_ms: [300, 600],
      heartbeat_ms: 50,
      session: { default_ttl_ms: 10_000, min_ttl_ms: 1000, max_ttl_ms: 3_600_000, lock_delay_ms: 0 },
      snapshot_every_entries: 10_000,
    };
    const variants: { what: string; edit: (c: Record<string, unknown>) => unknown; mentions: RegExp; raw?: string; node?: string }[] = [
      { what: 'unknown top-level field', edit: (c) => ({ ...c, colour: 'red' }), mentions: /colour/ },
      { what: 'heartbeat_ms as a string', edit: (c) => ({ ...c, heartbeat_ms: 'fast' }), mentions: /heartbeat_ms/ },
      { what: 'election timeout min above max', edit: (c) => ({ ...c, election_timeout_ms: [600, 300] }), mentions: /election_timeout_ms/ },
      { what: 'a node api that is not a URL', edit: (c) => ({ ...c, nodes: [{ ...good.nodes[0], api: 'localhost:7' }, good.nodes[1], good.nodes[2]] }), mentions: /nodes.*api|api/ },
      { what: 'duplicate node ids', edit: (c) => ({ ...c, nodes: [good.nodes[0], { ...good.nodes[1], id: 'n1' }, good.nodes[2]] }), mentions: /n1|id/ },
      { what: 'session ttl out of order', edit: (c) => ({ ...c, session: { ...good.session, min_ttl_ms: 20_000 } }), mentions: /ttl/ },
      { what: 'unknown field in session', edit: (c) => ({ ...c, session: { ...good.session, ttl: 5 } }), mentions: /session/ },
      { what: 'missing nodes', edit: (c) => ({ ...c, nodes: undefined }), mentions: /nodes/ },
      { what: 'invalid JSON', edit: (c) => c, raw: '{"cluster": "cli", ', mentions: /JSON/ },
      { what: 'a node id not in the file', edit: (c) => c, node: 'n9', mentions: /n9/ },
    ];
    for (const [i, v] of variants.entries()) {
      const file = join(dir, `bad-${i}.json`);
      writeFileSync(file, v.raw ?? JSON.stringify(v.edit({ ...good })));
      const r = await runCli(['serve', '--config', file, '--node', v.node ?? 'n1']);
      assertOneLine(r, v.mentions, v.what);
    }
    const missing = await runCli(['serve', '--config', join(dir, 'does-not-exist.json'), '--node', 'n1']);
    assertOneLine(missing, /does-not-exist\.json/, 'a missing config file');
    // nothing of the bad starts is left listening
    for (const p of [a1, p1]) assert.ok(await portIsFree(p!), `port ${p} in use after failed starts`);
  });

  it('a data directory locked by a running node: a second node on it exits with a clear line; the first is unharmed', async () => {
    const h = await ClusterHarness.create({ nodes: 3 });
    cleanups.push(() => h.close());
    h.start('n1');
    await eventually(async () => (await h.request('n1', 'GET', '/healthz')).status === 200, 15_000, 'n1 to serve');
    const n1Dir = join(h.dir, 'data', 'n1');

    // another node id, its own free ports, but n1's data directory
    const other = await runCli(['serve', '--config', h.configPath, '--node', 'n2', '--data-dir', n1Dir]);
    assertOneLine(other, /in use|lock/i, 'a second node on a locked data dir');
    assert.ok(other.stderr.includes(n1Dir), `the line names the directory: ${other.stderr}`);
    // the same node started twice (same dir, same ports)
    const twice = await runCli(['serve', '--config', h.configPath, '--node', 'n1']);
    assertOneLine(twice, /in use|lock|EADDRINUSE/i, 'the same node started twice');

    assert.ok(h.node('n1').proc, 'the running n1 is still up');
    assert.equal((await h.request('n1', 'GET', '/healthz')).status, 200);
    assert.equal((await h.view('n1')).node_id, 'n1');
    // and it still works once its peers come up
    h.start('n2');
    h.start('n3');
    await h.waitForLeader();
    const r = await h.request('n1', 'POST', '/v1/locks/after-lock-test/acquire', {});
    assert.equal(r.status, 200, r.text);
  });

  it('an API or peer port already in use: `raftlock serve` exits 2 with a line naming the address, and does not hang', async () => {
    const h = await ClusterHarness.create({ nodes: 3 });
    cleanups.push(() => h.close());
    for (const which of ['api', 'peer'] as const) {
      const url = new URL(h.node('n1')[which]);
      const squatter = createServer((sock) => sock.destroy()); // holds the port, serves nothing
      await new Promise<void>((r) => squatter.listen(Number(url.port), '127.0.0.1', () => r()));
      try {
        const r = await runCli(['serve', '--config', h.configPath, '--node', 'n1'], 20_000);
        const ctx = `${which} port busy: exit ${r.code} ${r.signal ?? ''}, stderr ${JSON.stringify(r.stderr)}`;
        assert.equal(r.signal, null, `${ctx} (hung until killed)`);
        assert.equal(r.code, 2, ctx);
        // node's own process warnings aside, one line that names the address
        const lines = r.stderr.split('\n').filter((l) => l.trim() !== '' && !/^\(node:\d+\)|^\(Use `node/.test(l));
        assert.equal(lines.length, 1, ctx);
        assert.ok(lines[0]!.includes(`${url.hostname}:${url.port}`), ctx);
        assert.doesNotMatch(r.stderr, /\n\s+at .+:\d+:\d+/, `${ctx}: stack trace`);
      } finally {
        await new Promise<void>((r) => squatter.close(() => r()));
      }
    }
  });

  it('`raftlock cluster` with a node that cannot start: says which and why, stops the others, exits 1, frees the ports', async () => {
    const h = await ClusterHarness.create({ nodes: 3 });
    cleanups.push(() => h.close());
    const busy = new URL(h.node('n2').api);
    const squatter = createServer((sock) => sock.destroy()); // holds the port, serves nothing
    await new Promise<void>((r) => squatter.listen(Number(busy.port), '127.0.0.1', () => r()));
    cleanups.push(() => new Promise<void>((r) => squatter.close(() => r())));
    const r = await runCli(['cluster', '--config', h.configPath, '--log-level', 'warn'], 40_000);
    const out = r.stdout + r.stderr;
    assert.equal(r.signal, null, `raftlock cluster hung: ${out}`);
    assert.equal(r.code, 1, out);
    assert.match(out, new RegExp(`\\[n2\\].*EADDRINUSE.*${busy.port}`), out);
    assert.match(out, /node n2 exited/);
    assert.match(out, /all nodes stopped/);
    const ports = h.nodes.flatMap((n) => [n.api, n.peer]).filter((u) => u !== h.node('n2').api).map((u) => Number(new URL(u).port));
    for (const p of ports) assert.ok(await portIsFree(p), `port ${p} still in use`);
    assert.deepEqual(processesMentioning(h.configPath), []);
  });
});
