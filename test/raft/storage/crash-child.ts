// Child process for crash.test.ts: opens LevelStorage in a directory and writes random
// Raft-valid batches in a loop until it is SIGKILLed. Protocol, one JSON object per line
// on stdout. A write to a pipe is NOT synchronous once the pipe is full (a parent slow to
// read, on a loaded machine, and op lines of many kilobytes): libuv queues the rest in
// this process, where a SIGKILL loses it. So each op line is handed to the kernel (the
// write's callback) before its disk write starts; a kill can then cut at most a line whose
// write never started, and the parent ignores a torn last line. (Before, a kill lost a
// queue of op lines whose writes had reached the disk: CRASH_UNSYNCED_SEED=1740642564,
// round 7, in a loaded .ci/run found the disk 57 entries ahead of every reported op.)
//   {"t":"ready"}                         storage opened and verified
//   {"t":"op","seq":N,"op":<Op>}          about to write (may or may not reach the disk)
//   {"t":"ack","seq":N,"synced":bool}     the write's promise resolved
// Usage: crash-child <dir> <plain|unsynced> <seed>
//   plain:    every write is sync:true through LevelStorage
//   unsynced: through UnsyncedLossStorage, only ~1 write in 4 is sync:true
import { seededRng } from '../../../src/raft/core/rng.js';
import type { DurableStorage } from '../../../src/raft/seams.js';
import { LevelStorage } from '../../../src/raft/storage/level-storage.js';
import { UnsyncedLossStorage } from '../../../src/raft/storage/unsynced-loss-storage.js';
import { SEED_CONF, genOp, opToJson, type ReadableStorage } from './helpers.js';

const MAX_OPS = 100_000; // a bound, in case nobody kills us

/** resolves once the line has left this process (written to the pipe, not queued here) */
function writeLine(line: string): Promise<void> {
  return new Promise((resolve, reject) => process.stdout.write(line, (err) => (err ? reject(err) : resolve())));
}

async function main(): Promise<void> {
  const [dir, mode, seedArg] = process.argv.slice(2);
  if (dir === undefined || (mode !== 'plain' && mode !== 'unsynced') || seedArg === undefined) {
    throw new Error('usage: crash-child <dir> <plain|unsynced> <seed>');
  }
  // the parent holds our stdin open; if it dies, stop instead of writing forever
  process.stdin.on('end', () => process.exit(3));
  process.stdin.resume();

  const level = await LevelStorage.open(dir, { seedConf: SEED_CONF });
  const s: DurableStorage & ReadableStorage = mode === 'unsynced' ? new UnsyncedLossStorage(level) : level;
  const syncRatio = mode === 'unsynced' ? 0.25 : 1;
  const rng = seededRng(Number(seedArg));
  process.stdout.write('{"t":"ready"}\n');
  for (let seq = 0; seq < MAX_OPS; seq++) {
    const op = genOp(rng, s, syncRatio);
    await writeLine(`{"t":"op","seq":${seq},"op":${opToJson(op)}}\n`);
    if (op.kind === 'save') await s.save(op.batch, { sync: op.sync });
    else await s.compact(op.snapshot);
    const synced = mode === 'plain' || (op.kind === 'save' && op.sync);
    process.stdout.write(`{"t":"ack","seq":${seq},"synced":${synced}}\n`);
  }
  await s.close();
  process.exit(0);
}

main().catch((err: unknown) => {
  process.stderr.write(`crash-child: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(2);
});
