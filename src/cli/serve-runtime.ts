// Process-level settings for a `raftlock serve` process (docs/operations.md, "Memory").
// They must be in place before the process starts, so whatever launches a node applies
// them: the systemd unit (deploy/systemd), `raftlock cluster` (npm start), the benchmark,
// jepsen-lite and the test harness. Measured with 100,000 sessions each holding a lock
// (`npm run bench -- --scale 100000`): RSS 370–430 MiB per node without them, 196–256
// MiB with them, same throughput.
//
// Why each one:
//  - MALLOC_MMAP_THRESHOLD_: glibc raises its mmap threshold every time a large block is
//    freed (up to 32 MiB); after the first snapshot buffer, every buffer below that size
//    comes from the arena heap, which fragments and is never given back. A fixed 128 KiB
//    threshold keeps large buffers in mmap, returned to the OS when freed.
//  - MALLOC_ARENA_MAX: one arena per thread that ever allocated (libuv's pool, LevelDB's
//    compaction thread, V8's workers) keeps its own free memory; two are plenty.
//  - --max-semi-space-size=4 (MiB): V8's young generation otherwise grows to 3 × 16 MiB.
//    Requests are short-lived garbage; scavenging 4 MiB semi-spaces more often costs
//    little and keeps ~40 MiB less resident.

/** node flags for a serve process (also valid in NODE_OPTIONS) */
export const SERVE_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=4'];

/** glibc malloc settings for a serve process */
export const SERVE_MALLOC_ENV: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: '2', MALLOC_MMAP_THRESHOLD_: '131072' };

/** `base` plus the malloc settings it does not set itself (an operator's value wins) */
export function serveEnv(base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  return { ...SERVE_MALLOC_ENV, ...base };
}

/** Which of the settings this process runs with (logged at start, so an operator can see
 *  why a node uses more memory than the documentation says). */
export function memoryTuning(env: NodeJS.ProcessEnv = process.env, flags: readonly string[] = [...process.execArgv, ...(env.NODE_OPTIONS ?? '').split(/\s+/)]): { malloc: boolean; semiSpace: boolean } {
  return {
    malloc: Object.keys(SERVE_MALLOC_ENV).every((k) => env[k] !== undefined),
    semiSpace: flags.some((f) => f.startsWith('--max-semi-space-size')),
  };
}
