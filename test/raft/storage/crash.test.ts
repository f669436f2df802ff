// Crash safety: a child process writes random Raft-valid batches to LevelStorage and
// reports each acknowledged write; we SIGKILL it at seeded random moments and, after each
// kill, reopen the directory and require that it holds exactly the acknowledged state
// (plus, at most, writes that were in flight), intact and contiguous (open verifies
// checksums and contiguity itself).
// Replay: CRASH_SEED=<seed> (printed below); more kills: CRASH_KILLS=<n per scenario>.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { seededRng, type Rng } from '../../../src/raft/core/rng.js';
import { MemoryStorage } from '../../../src/raft/core/storage.js';
import { LevelStorage } from '../../../src/raft/storage/level-storage.js';
import { SEED_CONF, applyOp, cloneMemory, dump, opFromJson, tempDir, type Op } from './helpers.js';
import { testSeed } from '../../support/seed.js';

const KILLS = Number(process.env.CRASH_KILLS ?? 50);
const ROUND_DEADLINE_MS = 30_000;

// Run the child the way we are run: from dist (.js) under `npm test`, or from sources
// with tsx during development.
const selfIsTs = import.meta.url.endsWith('.ts');
const CHILD = fileURLToPath(new URL(`./crash-child.${selfIsTs ? 'ts' : 'js'}`, import.meta.url));
const LOADER = selfIsTs ? ['--import', import.meta.resolve('tsx')] : [];

const cleanups: (() => void)[] = [];
after(() => cleanups.forEach((f) => f()));

interface Record { seq: number; op: Op; acked: boolean; synced: boolean }

/** one child lifetime: spawn, let it write, SIGKILL it at a random moment */
async function runChild(dir: string, mode: 'plain' | 'unsynced', childSeed: number, rng: Rng): Promise<Record[]> {
  const child = spawn(process.execPath, [...LOADER, CHILD, dir, mode, String(childSeed)], { stdio: ['pipe', 'pipe', 'pipe'] });
  cleanups.push(() => child.kill('SIGKILL'));
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const closed = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('close', (code, signal) => resolve({ code, signal })));
  const kill = (): void => void child.kill('SIGKILL');

  // 1 round in 10 dies at a random moment during start-up (open, verify, init)
  const killAfterAcks = rng.next() < 0.1 ? 0 : rng.int(1, 40);
  const delayMs = rng.int(0, 3);
  if (killAfterAcks === 0) setTimeout(kill, rng.int(0, 200));
  let timedOut = false;
  const deadline = setTimeout(() => {
    timedOut = true;
    kill();
  }, ROUND_DEADLINE_MS);

  // 1 round in 8 reads slowly, as a loaded parent does, so the child's pipe fills and its
  // writes to stdout queue up (what a kill must not lose: crash-child.ts). It takes a
  // parent that almost never reads: with half of the time paused the fix-off child was
  // not caught in 400 kills; with this, in 3 of 4 scenarios of 100 kills.
  if (rng.next() < 0.125) {
    const slow = setInterval(() => {
      child.stdout.pause();
      setTimeout(() => child.stdout.resume(), 250);
    }, 270);
    void closed.then(() => clearInterval(slow));
  }
  const records: Record[] = [];
  let acks = 0;
  let torn: string | null = null;
  createInterface({ input: child.stdout }).on('line', (line) => {
    // the kill may cut the last line; the child starts no write before its line is out
    // (crash-child.ts), so a torn line's op never reached the disk. Nothing may follow it.
    assert.equal(torn, null, `a line after a torn one: ${torn?.slice(0, 80)}`);
    let msg: { t: string; seq?: number; op?: unknown; synced?: boolean };
    try {
      msg = JSON.parse(line) as typeof msg;
    } catch {
      torn = line;
      return;
    }
    if (msg.t === 'op') {
      assert.equal(msg.seq, records.length, 'child reports ops in order');
      records.push({ seq: msg.seq!, op: opFromJson(msg.op), acked: false, synced: false });
    } else if (msg.t === 'ack') {
      const r = records[msg.seq!]!;
      r.acked = true;
      r.synced = msg.synced === true;
      if (++acks === killAfterAcks) setTimeout(kill, delayMs);
    }
  });
  const { code, signal } = await closed;
  clearTimeout(deadline);
  assert.ok(!timedOut, `child did not reach ${killAfterAcks} acks within ${ROUND_DEADLINE_MS} ms; stderr: ${stderr}`);
  assert.equal(signal, 'SIGKILL', `child exited by itself (code ${code}); stderr: ${stderr}`);
  return records;
}

/**
 * After a kill the disk must hold: `base` + every op up to the last SYNCED acknowledged
 * one (call that M), then possibly a prefix of the later ops (acknowledged but unsynced
 * writes, and the one in flight). Returns the state found and how many later ops it has.
 */
async function checkAfterKill(dir: string, base: MemoryStorage, records: Record[], label: string): Promise<{ state: MemoryStorage; extra: number; ackedAfterSync: number }> {
  const lastSynced = records.findLastIndex((r) => r.acked && r.synced);
  for (const r of records.slice(0, lastSynced + 1)) assert.ok(r.acked, `${label}: op ${r.seq} unacknowledged before a later synced ack`);
  const m = cloneMemory(base);
  for (const r of records.slice(0, lastSynced + 1)) applyOp(m, r.op);
  const later = records.slice(lastSynced + 1);

  const storage = await LevelStorage.open(dir, { seedConf: SEED_CONF }); // verifies checksums, contiguity, terms
  const found = dump(storage);
  await storage.close();

  const candidate = cloneMemory(m);
  for (let k = 0; k <= later.length; k++) {
    if (k > 0) applyOp(candidate, later[k - 1]!.op);
    try {
      assert.deepEqual(found, dump(candidate));
      return { state: candidate, extra: k, ackedAfterSync: later.filter((r) => r.acked).length };
    } catch {
      // try the next prefix
    }
  }
  // none matched: show the difference against the acknowledged state
  assert.deepEqual(found, dump(m), `${label}: the disk holds neither the acknowledged state nor it plus a prefix of the ${later.length} later writes`);
  throw new Error('unreachable');
}

async function crashScenario(mode: 'plain' | 'unsynced', envSeedName: string): Promise<{ kills: number; lostUnsynced: number }> {
  const seed = testSeed(envSeedName, { what: `crash test (${mode}), ${KILLS} kills`, replay: 'node --test dist/test/raft/storage/crash.test.js' });
  const rng = seededRng(seed);
  const { dir, remove } = tempDir(`crash-${mode}`);
  cleanups.push(remove);
  let model = new MemoryStorage(SEED_CONF);
  let lostUnsynced = 0;
  for (let round = 0; round < KILLS; round++) {
    const label = `round ${round} (replay: ${envSeedName}=${seed})`;
    const records = await runChild(dir, mode, rng.int(0, 2 ** 31), rng);
    const { state, extra, ackedAfterSync } = await checkAfterKill(dir, model, records, label);
    if (extra < ackedAfterSync) lostUnsynced++;
    model = state;
  }
  return { kills: KILLS, lostUnsynced };
}

test('SIGKILL at random moments never loses or damages an acknowledged synced write', async () => {
  const { kills } = await crashScenario('plain', 'CRASH_SEED');
  assert.ok(kills >= 1);
});

test('with UnsyncedLossStorage, synced writes survive a SIGKILL and unsynced ones may vanish', async () => {
  const { kills, lostUnsynced } = await crashScenario('unsynced', 'CRASH_UNSYNCED_SEED');
  console.log(`crash test (unsynced): ${lostUnsynced} of ${kills} kills lost acknowledged-but-unsynced writes`);
  // ~3 writes in 4 are unsynced, so most kills land with some pending; if none was ever
  // lost, the wrapper is not doing its job
  if (kills >= 10) assert.ok(lostUnsynced > 0, 'no kill lost an unsynced write: UnsyncedLossStorage is not holding them back');
});
