// Backup file format and restore preparation, without a cluster: checksums catch every
// damage, the restore keeps the lock state and replaces membership and addresses, the
// token floor lifts new tokens, and seeding refuses any directory that holds something.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { parseConfig } from '../../../../src/config.js';
import { encodeCommand } from '../../../../src/server/app/command-codec.js';
import { LockApp } from '../../../../src/server/app/lock-app.js';
import type { ApplyOutput, Command } from '../../../../src/lock-fsm/index.js';
import { LevelStorage } from '../../../../src/raft/storage/level-storage.js';
import { BackupFormatError, decodeBackup, encodeBackup } from '../../../../src/server/ops/format/backup-file.js';
import { prepareRestore, restoreNode } from '../../../../src/server/ops/restore.js';

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'raftlock-backup-test-'));
  dirs.push(d);
  return d;
}

function oldCluster(): { app: LockApp; index: number; tokens: Record<string, number> } {
  const app = new LockApp({}, (i, e) => assert.fail(`bad entry ${i}: ${e.message}`));
  app.members.set('old1', { id: 'old1', api: 'http://10.0.0.1:7001', peer: 'http://10.0.0.1:7101' });
  const cmds: Command[] = [
    { kind: 'openSession', sessionId: 's1', ttlMs: 30000, owner: 'alice', lockDelayMs: 0 },
    { kind: 'openSession', sessionId: 's2', ttlMs: 30000, owner: 'bob', lockDelayMs: 0 },
    { kind: 'acquire', name: 'a', sessionId: 's1', waitMs: 0 },
    { kind: 'acquire', name: 'b/c', sessionId: 's2', waitMs: 0 },
    { kind: 'acquire', name: 'a', sessionId: 's2', waitMs: 60000 },
  ];
  const tokens: Record<string, number> = {};
  cmds.forEach((cmd, k) => {
    const out = app.apply({ index: k + 1, term: 2, kind: 'normal', data: encodeCommand({ atMs: 1_700_000_000_000 + k, cmd }) }) as ApplyOutput;
    if (out.result.ok && out.result.kind === 'acquired') tokens[out.result.name] = out.result.fencingToken;
  });
  return { app, index: cmds.length, tokens };
}

function backupOf(app: LockApp, index: number): Buffer {
  const c = app.fsm.counts();
  return encodeBackup({
    cluster: 'old', created_at: new Date(0).toISOString(), source_node: 'old1', raftlock_version: 'test', index, term: 2,
    conf: { voters: ['old1'], learners: [] }, members: [{ id: 'old1', api: 'http://10.0.0.1:7001', peer: 'http://10.0.0.1:7101' }],
    sessions: c.sessions, locks_held: c.heldLocks, waiters: c.waiters, last_token: app.fsm.lastToken,
  }, app.snapshot());
}

function newConfig(dataDir: string) {
  return parseConfig({
    cluster: 'new',
    nodes: [
      { id: 'n1', api: 'http://127.0.0.1:17001', peer: 'http://127.0.0.1:17101' },
      { id: 'n2', api: 'http://127.0.0.1:17002', peer: 'http://127.0.0.1:17102' },
      { id: 'n3', api: 'http://127.0.0.1:17003', peer: 'http://127.0.0.1:17103' },
    ],
    data_dir: dataDir,
  }, join(dataDir, 'cluster.config.json'));
}

describe('backup file', () => {
  it('round-trips and says what it holds', () => {
    const { app, index } = oldCluster();
    const { meta, payload } = decodeBackup(backupOf(app, index));
    assert.equal(meta.index, 5);
    assert.equal(meta.locks_held, 2);
    assert.equal(meta.waiters, 1);
    assert.equal(meta.sessions, 2);
    assert.deepEqual(Buffer.from(payload), Buffer.from(app.snapshot()));
  });

  it('any flipped byte, truncation or foreign file is refused with a clear reason', () => {
    const { app, index } = oldCluster();
    const file = backupOf(app, index);
    for (let i = 0; i < file.length; i += Math.max(1, Math.floor(file.length / 97))) {
      const bad = Buffer.from(file);
      bad[i] = bad[i]! ^ 0x20;
      assert.throws(() => decodeBackup(bad), BackupFormatError, `flip at ${i}`);
    }
    for (const cut of [0, 10, 30, file.length - 1, file.length - 40]) assert.throws(() => decodeBackup(file.subarray(0, cut)), BackupFormatError, `cut at ${cut}`);
    assert.throws(() => decodeBackup(Buffer.from('{"not":"a backup"}')), /not a raftlock backup/);
    assert.throws(() => decodeBackup(Buffer.concat([file, Buffer.from('x')])), /trailer is missing|checksum/);
  });
});

describe('restore preparation and seeding', () => {
  it('keeps the lock state, takes membership and addresses from the new file', async () => {
    const { app, index, tokens } = oldCluster();
    const dir = tempDir();
    const config = newConfig(dir);
    const { snapshot } = prepareRestore(backupOf(app, index), config);
    assert.equal(snapshot.meta.index, index);
    assert.deepEqual(snapshot.meta.conf, { voters: ['n1', 'n2', 'n3'], learners: [] });
    const restored = new LockApp({}, () => undefined);
    restored.restore(snapshot.data, index);
    assert.deepEqual([...restored.members.keys()].sort(), ['n1', 'n2', 'n3']);
    assert.equal(restored.members.get('n2')?.api, 'http://127.0.0.1:17002');
    assert.equal(restored.fsm.getLock('a').holder?.fencingToken, tokens['a']);
    assert.equal(restored.fsm.getLock('b/c').holder?.fencingToken, tokens['b/c']);
    assert.equal(restored.fsm.getLock('a').waiters, 1);

    // seed n1, then open it the way a node does: snapshot, commit and membership in place
    const r = await restoreNode(backupOf(app, index), config, 'n1');
    assert.equal(r.dataDir, join(dir, 'n1'));
    const st = await LevelStorage.open(r.dataDir, { seedConf: { voters: ['ignored'], learners: [] } });
    try {
      assert.equal(st.snapshot().meta.index, index);
      assert.equal(st.hardState().commit, index);
      assert.equal(st.hardState().vote, null);
      assert.equal(st.lastIndex(), index);
      assert.deepEqual(st.initialState().conf.voters, ['n1', 'n2', 'n3']);
    } finally {
      await st.close();
    }
    // a grant after the restore takes a token above every restored one
    const next = restored.apply({ index: index + 1, term: 3, kind: 'normal', data: encodeCommand({ atMs: 1_800_000_000_000, cmd: { kind: 'acquire', name: 'fresh', sessionId: 's1', waitMs: 0 } }) }) as ApplyOutput;
    assert.ok(next.result.ok && next.result.kind === 'acquired' && next.result.fencingToken > Math.max(...Object.values(tokens)));
  });

  it('--token-floor lifts every new token above the floor', () => {
    const { app, index } = oldCluster();
    const { snapshot } = prepareRestore(backupOf(app, index), newConfig(tempDir()), { tokenFloor: 5000 });
    const restored = new LockApp({}, () => undefined);
    restored.restore(snapshot.data, index);
    assert.equal(restored.fsm.lastToken, 5000);
    const next = restored.apply({ index: index + 1, term: 3, kind: 'normal', data: encodeCommand({ atMs: 1, cmd: { kind: 'acquire', name: 'fresh', sessionId: 's1', waitMs: 0 } }) }) as ApplyOutput;
    assert.ok(next.result.ok && next.result.kind === 'acquired');
    assert.equal(next.result.fencingToken, 5001);
  });

  it('refuses a directory that holds anything', async () => {
    const { app, index } = oldCluster();
    const dir = tempDir();
    const config = newConfig(dir);
    mkdirSync(join(dir, 'n2'));
    writeFileSync(join(dir, 'n2', 'stray'), 'x');
    await assert.rejects(restoreNode(backupOf(app, index), config, 'n2'), (e: Error) => e.name === 'RestoreError' && /not empty/.test(e.message));
    const { snapshot } = prepareRestore(backupOf(app, index), config);
    await assert.rejects(LevelStorage.seed(join(dir, 'n2'), snapshot), /not empty/);
    await restoreNode(backupOf(app, index), config, 'n3');
    await assert.rejects(restoreNode(backupOf(app, index), config, 'n3'), /not empty/);
  });
});
