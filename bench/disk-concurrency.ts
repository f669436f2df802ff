// Disk benchmark (not a test): what one synced write costs when several processes sync the
// same disk at once, as the three members of `npm run bench`'s local cluster do.
//   npm run bench:disk-concurrency [-- --writers 3] [--writes 1500] [--reps 2] [--dir DIR]
// Each mode runs with 1 writer, then with N writer processes side by side (one data
// directory each), every writer making `--writes` synced 120-byte writes back to back;
// it prints each writer's p50 / p90 / p99 in ms. The modes take the save apart:
//   main      append + fdatasync on the event loop's thread (the disk alone)
//   prealloc  the same into an already written file, as etcd's preallocated WAL (no size
//             change to journal)
//   pool      append on the event loop, fdatasync on libuv's thread pool (the hand-off
//             to a pool thread and back, which any asynchronous save pays)
//   level     one LevelDB batch through `level` (an entry and the hard state), sync:
//             what a follower's save is made of
// BENCHMARKS.md "Sixth round" reads the figures.
import { spawn } from 'node:child_process';
import { closeSync, fdatasync, fdatasyncSync, fsyncSync, mkdirSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Level } from 'level';
import { percentile } from './percentile.js';

const MODES = ['main', 'prealloc', 'pool', 'level'] as const;
type Mode = (typeof MODES)[number];
const RECORD = Buffer.alloc(120, 0x5a);

function usage(message: string): never {
  console.error(`bench:disk-concurrency: ${message}`);
  process.exit(2);
}

const { values } = (() => {
  try {
    return parseArgs({
      options: {
        writers: { type: 'string', default: '3' },
        writes: { type: 'string', default: '1500' },
        reps: { type: 'string', default: '2' },
        dir: { type: 'string' },
        child: { type: 'string' },
      },
      strict: true,
    });
  } catch (err) {
    return usage((err as Error).message);
  }
})();

function positive(name: string, v: string | undefined): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) usage(`--${name} must be a positive integer, got ${JSON.stringify(v)}`);
  return n;
}

/** one writer: `writes` synced writes in `dir`; latencies in ms */
async function writer(mode: Mode, dir: string, writes: number): Promise<number[]> {
  mkdirSync(dir, { recursive: true });
  const lat: number[] = [];
  if (mode === 'level') {
    const db = new Level<Buffer, Buffer>(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
    await db.open();
    const hardState = Buffer.alloc(24, 1);
    for (let i = 0; i < writes; i++) {
      const key = Buffer.alloc(9);
      key.writeBigUInt64BE(BigInt(i + 1), 1);
      const t0 = performance.now();
      await db.batch().put(key, RECORD).put(Buffer.from('h'), hardState).write({ sync: true });
      lat.push(performance.now() - t0);
    }
    await db.close();
    return lat;
  }
  const fd = openSync(join(dir, 'log'), 'w+');
  try {
    if (mode === 'prealloc') {
      writeSync(fd, Buffer.alloc(writes * RECORD.length + 4096));
      fsyncSync(fd);
    }
    for (let i = 0; i < writes; i++) {
      const t0 = performance.now();
      writeSync(fd, RECORD, 0, RECORD.length, i * RECORD.length);
      if (mode === 'pool') await new Promise<void>((resolve, reject) => fdatasync(fd, (err) => (err ? reject(err) : resolve())));
      else fdatasyncSync(fd);
      lat.push(performance.now() - t0);
    }
  } finally {
    closeSync(fd);
  }
  return lat;
}

function runChild(mode: Mode, dir: string, writes: number): Promise<string> {
  const self = fileURLToPath(import.meta.url);
  const child = spawn(process.execPath, [...process.execArgv, self, '--child', mode, '--dir', dir, '--writes', String(writes)], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  return new Promise((resolve, reject) => child.on('close', (code) => (code === 0 ? resolve(out.trim()) : reject(new Error(`writer (${mode}) exited with ${code}`)))));
}

if (values.child !== undefined) {
  const mode = values.child as Mode;
  if (!MODES.includes(mode)) usage(`--child must be one of ${MODES.join(', ')}`);
  if (values.dir === undefined) usage('--child needs --dir');
  const lat = (await writer(mode, values.dir, positive('writes', values.writes))).sort((a, b) => a - b);
  console.log(`p50 ${percentile(lat, 50).toFixed(3)}  p90 ${percentile(lat, 90).toFixed(3)}  p99 ${percentile(lat, 99).toFixed(3)}`);
} else {
  const writers = positive('writers', values.writers);
  const writes = positive('writes', values.writes);
  const reps = positive('reps', values.reps);
  const root = mkdtempSync(join(values.dir ?? tmpdir(), 'raftlock-bench-disk-'));
  try {
    console.log(`${writes} synced ${RECORD.length}-byte writes per writer, ms per write; ${reps} rep(s), in ${root}`);
    for (let rep = 1; rep <= reps; rep++) {
      for (const mode of MODES) {
        for (const n of [1, writers]) {
          const dirs = Array.from({ length: n }, (_, k) => join(root, `${mode}-${rep}-${n}-${k}`));
          const lines = await Promise.all(dirs.map((d) => runChild(mode, d, writes)));
          console.log(`rep ${rep}  ${mode.padEnd(8)} ${String(n).padStart(2)} writer(s): ${lines.join('  |  ')}`);
          for (const d of dirs) rmSync(d, { recursive: true, force: true });
        }
      }
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}
