// Heap probes: how much of what some code made is still in the heap after two scavenges,
// measured in a child process started with --expose-gc (runHeapProbe starts it; the probe
// module uses bytesLeftAfterScavenges and prints one JSON line). Used by
// test/api/request-context-gc.test.ts and test/transport/decode-gc.test.ts
// (BENCHMARKS.md "Tenth round").
import { execFileSync } from 'node:child_process';
import { getHeapSpaceStatistics } from 'node:v8';
import { fileURLToPath } from 'node:url';

type Gc = (o?: { type: 'minor' | 'major' }) => void;

function exposedGc(): Gc {
  const gc = (globalThis as { gc?: Gc }).gc;
  if (gc === undefined) throw new Error('a heap probe runs with --expose-gc (runHeapProbe)');
  return gc;
}

/** bytes in use in the young and the old generation */
function heapUsed(): number {
  let n = 0;
  for (const s of getHeapSpaceStatistics()) if (s.space_name === 'new_space' || s.space_name === 'old_space') n += s.space_used_size;
  return n;
}

/**
 * Heap bytes `work` leaves behind after two scavenges, the smallest of three trials (a
 * trial can be disturbed, not made smaller). A full collection first, so nothing older
 * counts. Measure the code under test before a control that keeps what it makes: V8 learns
 * from such a control to allocate the same sites straight into the old generation
 * (allocation-site pretenuring), which a later trial would count as kept.
 */
export async function bytesLeftAfterScavenges(work: () => void | Promise<void>): Promise<number> {
  const gc = exposedGc();
  let least = Infinity;
  for (let trial = 0; trial < 3; trial++) {
    gc();
    gc({ type: 'minor' });
    const before = heapUsed();
    await work();
    gc({ type: 'minor' });
    gc({ type: 'minor' });
    least = Math.min(least, heapUsed() - before);
  }
  return least;
}

/** runs the probe module at `probe` (compiled, beside its test) in a child with
 *  --expose-gc; returns its JSON line, parsed, and the line itself for messages */
export function runHeapProbe<T>(probe: URL): { result: T; line: string } {
  const line = execFileSync(process.execPath, ['--expose-gc', fileURLToPath(probe)], { encoding: 'utf8', timeout: 60_000 }).trim();
  return { result: JSON.parse(line) as T, line };
}
