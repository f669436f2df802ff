// Disaster recovery end to end (docs/operations.md "Restoring: disaster recovery (lost
// majority)"): a backup taken with the real `raftlock snapshot save` while clients keep
// acquiring, the whole cluster lost, `raftlock snapshot restore` into a fresh 3-node
// cluster (new ports, new directories). Every lock and session the backup must hold is
// there with the same token; every new token is above all restored ones.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { binPath, ClusterHarness } from '../support/cluster-harness.js';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function cli(args: string[], timeoutMs = 60_000): Promise<Run> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [binPath, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, RAFTLOCK_ENDPOINTS: '' } });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    p.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      p.kill('SIGKILL');
      reject(new Error(`raftlock ${args.join(' ')} still running after ${timeoutMs} ms; stderr: ${stderr}`));
    }, timeoutMs);
    p.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

interface Held {
  name: string;
  session: string;
  token: number;
}

describe('backup under load, restore into a new cluster', { timeout: 180_000 }, () => {
  let a: ClusterHarness;
  let b: ClusterHarness;

  before(async () => {
    // small snapshot interval: the leader's log is compacted while the backup is taken
    a = await ClusterHarness.create({ nodes: 3, snapshotEveryEntries: 100 });
    b = await ClusterHarness.create({ nodes: 3 });
  });
  after(async () => {
    await a?.close();
    await b?.close();
  });

  it('keeps every lock, session and token, and new tokens go above them', async () => {
    a.startAll();
    const leaderA = await a.waitForLeader();
    const ids = a.nodes.map((n) => n.id);

    // steady state: 12 locks over 4 sessions, and a queued waiter
    const sessions: string[] = [];
    for (let i = 0; i < 4; i++) {
      const r = await a.request(ids[i % 3]!, 'POST', '/v1/sessions', { ttl_ms: 120_000, owner: `svc-${i}` });
      assert.equal(r.status, 201, r.text);
      sessions.push(r.body.session_id as string);
    }
    const held: Held[] = [];
    for (let i = 0; i < 12; i++) {
      const session = sessions[i % 4]!;
      const r = await a.request(ids[i % 3]!, 'POST', `/v1/locks/steady/lock-${i}/acquire`, { session_id: session, owner: `svc-${i % 4}` });
      assert.equal(r.status, 200, r.text);
      held.push({ name: `steady/lock-${i}`, session, token: r.body.fencing_token as number });
    }
    const waiter = sessions[1]!;
    // a waiter queued behind lock-0 (held by sessions[0]); its HTTP wait dies with cluster A
    void a.request(leaderA, 'POST', '/v1/locks/steady/lock-0/acquire', { session_id: waiter, wait_ms: 100_000 }).catch(() => undefined);

    // load: 4 clients acquiring fresh locks (each with its own new session) until stopped
    let stop = false;
    const ackedBeforeSave: Held[] = [];
    let saveStarted = false;
    let loadOps = 0;
    const client = async (c: number): Promise<void> => {
      for (let k = 0; !stop; k++) {
        const name = `load/c${c}/k${k}`;
        const r = await a.request(ids[(c + k) % 3]!, 'POST', `/v1/locks/${name}/acquire`, { ttl_ms: 120_000, owner: `load-${c}` }).catch(() => null);
        if (r?.status === 200) {
          loadOps++;
          // acknowledged before the save was even started: the backup must hold it
          if (!saveStarted) ackedBeforeSave.push({ name, session: r.body.session_id as string, token: r.body.fencing_token as number });
        }
      }
    };
    const load = [0, 1, 2, 3].map(client);
    while (loadOps < 60) await new Promise((r) => setTimeout(r, 20));

    const file = join(b.dir, 'cluster-a.backup');
    saveStarted = true;
    const save = await cli(['snapshot', 'save', file, '--endpoints', a.endpoints.join(','), '--json']);
    const opsDuringSave = loadOps;
    await new Promise((r) => setTimeout(r, 300));
    stop = true;
    await Promise.all(load);
    assert.equal(save.code, 0, `save failed: ${save.stderr}`);
    assert.ok(loadOps > opsDuringSave || loadOps >= 60, 'the load kept running');
    const saved = JSON.parse(save.stdout) as { file: string; sha256: string; meta: { index: number; last_token: number; sessions: number; locks_held: number; waiters: number; source_node: string } };
    assert.equal(saved.file, file);
    assert.ok(existsSync(file));
    assert.ok(saved.meta.locks_held >= held.length + ackedBeforeSave.length, `backup holds ${saved.meta.locks_held} locks, expected at least ${held.length + ackedBeforeSave.length}`);
    assert.equal(saved.meta.waiters, 1, 'the queued waiter is in the backup');
    console.log(`# backup: index ${saved.meta.index}, ${saved.meta.sessions} sessions, ${saved.meta.locks_held} locks, last token ${saved.meta.last_token}, ${readFileSync(file).length} bytes; ${ackedBeforeSave.length} load acquires acknowledged before the save, ${loadOps} in all`);

    // inspect verifies it; a flipped byte is caught
    const inspect = await cli(['snapshot', 'inspect', file]);
    assert.equal(inspect.code, 0, inspect.stderr);
    assert.match(inspect.stdout, /: ok \(/);
    const damaged = Buffer.from(readFileSync(file));
    damaged[damaged.length - 200] = damaged[damaged.length - 200]! ^ 0x01;
    const badFile = join(b.dir, 'damaged.backup');
    writeFileSync(badFile, damaged);
    const bad = await cli(['snapshot', 'inspect', badFile]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /checksum mismatch/);

    // the disaster: every node of A is gone
    for (const id of ids) await a.kill(id);

    // restore every node of B from the same file; a second restore into a seeded dir is refused
    for (const n of b.nodes) {
      const r = await cli(['snapshot', 'restore', file, '--config', b.configPath, '--node', n.id, '--json']);
      assert.equal(r.code, 0, `restore ${n.id}: ${r.stderr}`);
      const out = JSON.parse(r.stdout) as { index: number; last_token: number; voters: string[]; next_token_above: number };
      assert.equal(out.index, saved.meta.index);
      assert.deepEqual(out.voters, b.nodes.map((x) => x.id));
      assert.equal(out.next_token_above, Math.max(saved.meta.index, saved.meta.last_token));
    }
    const again = await cli(['snapshot', 'restore', file, '--config', b.configPath, '--node', 'n1']);
    assert.equal(again.code, 2, again.stdout + again.stderr);
    assert.match(again.stderr, /not empty/);
    const bogus = await cli(['snapshot', 'restore', badFile, '--config', b.configPath, '--node', 'n1']);
    assert.equal(bogus.code, 2);
    assert.match(bogus.stderr, /cannot be used: checksum mismatch/);

    b.startAll();
    const leaderB = await b.waitForLeader(20_000);
    const bids = b.nodes.map((n) => n.id);

    // every steady lock and every load lock acknowledged before the save: same holder, same token
    let maxRestored = 0;
    for (const [k, h] of [...held, ...ackedBeforeSave].entries()) {
      const r = await b.request(bids[k % 3]!, 'GET', `/v1/locks/${h.name}`);
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.held, true, `${h.name} is held after the restore`);
      assert.equal(r.body.holder.session_id, h.session, `${h.name}: holder`);
      assert.equal(r.body.holder.fencing_token, h.token, `${h.name}: token`);
      maxRestored = Math.max(maxRestored, h.token);
    }
    assert.ok(maxRestored <= saved.meta.last_token);
    const lock0 = await b.request(leaderB, 'GET', '/v1/locks/steady/lock-0');
    assert.equal(lock0.body.waiters, 1, 'the waiter is still queued');
    // sessions are alive (within their TTL) and keep their locks; they can be kept alive
    for (const [i, s] of sessions.entries()) {
      const r = await b.request(bids[i % 3]!, 'GET', `/v1/sessions/${s}`);
      assert.equal(r.status, 200, r.text);
      assert.deepEqual([...(r.body.locks as string[])].sort(), held.filter((h) => h.session === s).map((h) => h.name).sort());
      const ka = await b.request(bids[(i + 1) % 3]!, 'POST', `/v1/sessions/${s}/keepalive`);
      assert.equal(ka.status, 200, ka.text);
    }

    // new grants: above every restored token and above the backup's index
    const floor = Math.max(saved.meta.last_token, saved.meta.index);
    const fresh = await b.request(bids[1]!, 'POST', '/v1/locks/after/restore/acquire', { ttl_ms: 60_000 });
    assert.equal(fresh.status, 200, fresh.text);
    assert.ok(fresh.body.fencing_token > floor, `new token ${fresh.body.fencing_token} must be above ${floor}`);
    // releasing a restored lock hands it to the restored waiter, with a newer token still
    const rel = await b.request(bids[2]!, 'POST', '/v1/locks/steady/lock-0/release', { session_id: sessions[0], fencing_token: held[0]!.token });
    assert.equal(rel.status, 200, rel.text);
    const handed = await b.request(leaderB, 'GET', '/v1/locks/steady/lock-0');
    assert.equal(handed.body.holder?.session_id, waiter, 'the queued waiter got the lock');
    assert.ok(handed.body.holder.fencing_token > fresh.body.fencing_token);
  });
});
