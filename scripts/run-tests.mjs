#!/usr/bin/env node
// Runs every compiled test file (dist/test/**/*.test.js) with node's own test runner, in two
// lanes side by side, so that `npm test` fits its budget on a 2-core machine:
//
// - the compute lane: pure, CPU-bound suites (the simulators, the Raft core's scenarios,
//   the lock state machine's properties) — one file at a time;
// - the process lanes: everything that starts servers, node processes, clusters or network
//   namespaces. These spend most of their time waiting (elections, TTLs, fault windows),
//   so they overlap well with the compute lane and with each other: two lanes, one file
//   at a time each (RAFTLOCK_PROCESS_LANES=N for another count). One file alone took
//   ~820 s in all (2026-12-01), over the budget; the files are dealt out by their measured
//   time (PROCESS_SECONDS), longest first, and the jepsen-lite runs share one lane, so two
//   fault runs, the most CPU-hungry and timing-bound files, never overlap.
//
// The compute lane runs at a lower CPU priority (nice 10) and the simulators use every
// core: it soaks up the time the process lane spends waiting, and yields the CPU whenever a
// node process, whose timing bounds (elections, recovery, expiry) are written for an
// unloaded machine, needs it.
//
// The first process lane streams its output; each other lane's is printed, whole, once it
// is done (so lanes never interleave mid-test). The last line is the sum of every lane's
// counts: "tests: N passed, N failed, N skipped". Just above the lane counts, each failed
// test is printed once more, cut short (failureDigest). The exit code is non-zero when any
// lane failed.
//
// Arguments filter by path substring: `npm test -- raft/ lock-fsm` runs only the files whose
// path contains one. RAFTLOCK_TEST_LANES=1 runs every file in one lane, one at a time (the
// old behaviour), for a machine with one core or to bisect an interaction.
// Ports: test/support/ports.ts claims each port across processes, so the lanes never hand
// out one port twice; network namespaces carry a per-run id (test/jepsen-lite/netns.ts).
import { existsSync, readdirSync, statSync, createWriteStream, readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { join, relative } from 'node:path';
import { tmpdir } from 'node:os';
import { spawn, spawnSync } from 'node:child_process';

const root = new URL('..', import.meta.url).pathname;
const testDir = join(root, 'dist', 'test');

/** directories (under dist/test) whose suites are pure computation */
const COMPUTE = ['sim/', 'checkers/', 'raft/', 'lock-fsm/', 'config/', 'bench/'];

function walk(dir) {
  const out = [];
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...walk(p));
    else if (name.endsWith('.test.js')) out.push(p);
  }
  return out;
}

/** a compiled test whose source is gone (tsc -b leaves the old output of a moved or deleted
 *  file in dist/): not run, so a move does not run a stale copy beside the new one */
const hasSource = (f) => existsSync(join(root, relative(join(root, 'dist'), f)).replace(/\.js$/, '.ts'));

const filters = process.argv.slice(2);
const compiled = walk(testDir);
const stale = compiled.filter((f) => !hasSource(f));
if (stale.length > 0) console.log(`skipped ${stale.length} compiled test file(s) whose source is gone (stale dist/; \`rm -rf dist && npm run build\` clears them): ${stale.map((f) => relative(testDir, f)).join(' ')}`);
const files = compiled.filter((f) => hasSource(f) && (filters.length === 0 || filters.some((s) => relative(root, f).includes(s))));
if (files.length === 0) {
  console.error(`no test files matched ${filters.join(' ') || '(all)'} under ${testDir}`);
  process.exit(1);
}

/** seconds each long process-lane file took alone (2026-12-01, the soak beside it at nice
 *  10; the jepsen-lite runs 2026-12-04 at load 6): only for dealing the files out; a file
 *  not listed counts as DEFAULT_SECONDS */
const PROCESS_SECONDS = {
  'jepsen-lite/jepsen-3': 100, 'jepsen-lite/jepsen-membership': 89, 'jepsen-lite/jepsen-disk-clock': 69,
  'cli/cli': 51, 'membership/reconfigure': 46, 'jepsen-lite/jepsen-5': 45,
  'storage/crash': 41, 'clients/go-python': 34, 'cluster/failover': 34,
  'cluster/cli': 34, 'jepsen-lite/control': 33, 'client/sdk-cluster': 28, 'cluster/api': 24, 'packaging/pack': 23,
  'client/acquire-cleanup': 22, 'cli/acquire-cleanup': 8, 'ops/backup-restore': 22, 'membership/transfer': 17, 'membership/add-then-start': 16,
  'cluster/recovery': 16, 'cluster/amnesia': 15, 'ops/status-page': 14, 'cluster/bad-input': 13, 'security/fuzz': 13,
  'security/limits': 13, 'cluster/lessor': 11, 'security/cluster-command': 11, 'cluster/watch': 9,
  // 2026-12-04, on a machine loaded by other runs: a private server, a cluster, a paused-holder run, an example
  'mysql/fencing': 33, 'redis/fencing': 28,
};
const DEFAULT_SECONDS = 4;

/** the process files in `n` lanes: the jepsen-lite runs together in the first, then the
 *  rest longest first, each to the lane with the least time so far */
function dealProcessLanes(list, n) {
  const key = (f) => relative(testDir, f).replace(/\.test\.js$/, '');
  const secs = (f) => PROCESS_SECONDS[key(f)] ?? DEFAULT_SECONDS;
  const out = Array.from({ length: n }, () => ({ files: [], secs: 0 }));
  const jepsen = list.filter((f) => key(f).startsWith('jepsen-lite/'));
  for (const f of jepsen) {
    out[0].files.push(f);
    out[0].secs += secs(f);
  }
  for (const f of list.filter((x) => !jepsen.includes(x)).sort((a, b) => secs(b) - secs(a) || a.localeCompare(b))) {
    const lane = out.reduce((best, l) => (l.secs < best.secs ? l : best));
    lane.files.push(f);
    lane.secs += secs(f);
  }
  // each lane runs its files in path order, as one lane did
  return out.map((l) => l.files.sort());
}

const oneLane = process.env.RAFTLOCK_TEST_LANES === '1';
const processLaneCount = Number(process.env.RAFTLOCK_PROCESS_LANES ?? 2);
if (!Number.isInteger(processLaneCount) || processLaneCount < 1 || processLaneCount > 8) {
  console.error(`RAFTLOCK_PROCESS_LANES must be an integer in 1..8, got ${JSON.stringify(process.env.RAFTLOCK_PROCESS_LANES)}`);
  process.exit(2);
}
const isCompute = (f) => COMPUTE.some((d) => relative(testDir, f).startsWith(d));
const lanes = oneLane
  ? [{ name: 'all', files, live: true }]
  : [
      ...dealProcessLanes(files.filter((f) => !isCompute(f)), processLaneCount).map((fs, i) => ({ name: processLaneCount === 1 ? 'process' : `process-${i + 1}`, files: fs, live: i === 0 })),
      { name: 'compute', files: files.filter(isCompute), live: false },
    ].filter((l) => l.files.length > 0);
if (!lanes.some((l) => l.live)) lanes[0].live = true;

/** `nice` (coreutils) is there on every Linux this runs on; without it the lanes just share */
const hasNice = spawnSync('nice', ['true']).status === 0;

const scratch = mkdtempSync(join(tmpdir(), 'raftlock-test-run-'));

/** run one lane; resolves with its exit code and the text of its output */
function runLane(lane) {
  return new Promise((resolve) => {
    const logFile = join(scratch, `${lane.name}.log`);
    const log = createWriteStream(logFile);
    const argv = [process.execPath, '--test', '--test-concurrency=1', '--test-reporter=spec', ...lane.files];
    const niced = lane.name === 'compute' && lanes.length > 1 && hasNice;
    const child = spawn(niced ? 'nice' : argv[0], niced ? ['-n', '10', ...argv] : argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
    for (const s of [child.stdout, child.stderr]) {
      s.on('data', (chunk) => {
        log.write(chunk);
        if (lane.live) (s === child.stdout ? process.stdout : process.stderr).write(chunk);
      });
    }
    child.on('close', (code, signal) => {
      const seconds = (Date.now() - started) / 1000;
      log.end(() => resolve({ lane, code: code ?? (signal ? 1 : 0), text: readFileSync(logFile, 'utf8'), seconds }));
    });
  });
}

function count(text, word) {
  // node's summary: "ℹ pass 812" (the last one in a lane's output is its total)
  const all = [...text.matchAll(new RegExp(`^ℹ ${word} (\\d+)$`, 'gm'))];
  return all.length ? Number(all[all.length - 1][1]) : 0;
}

const started = Date.now();
const results = await Promise.all(
  lanes.map((lane) =>
    runLane(lane).then((r) => {
      if (!lane.live) {
        process.stdout.write(`\n── ${lane.name} lane (${lane.files.length} files), printed when done ──\n`);
        process.stdout.write(r.text);
      }
      return r;
    }),
  ),
);
rmSync(scratch, { recursive: true, force: true });

/** The spec reporter's "failing tests" section of a lane, each test cut to its first lines
 *  without stack frames: printed again at the very end, because a CI that shows only the
 *  tail of the output would otherwise show the last lane's passes and not the failure,
 *  its seed or its verdict (the jepsen-lite runs put their summary first: support.ts). */
const DIGEST_LINES_PER_TEST = 45;
function failureDigest(text) {
  const at = text.lastIndexOf('✖ failing tests:');
  if (at < 0) return [];
  const blocks = [];
  for (const line of text.slice(at).split('\n').slice(1)) {
    if (line.startsWith('test at ')) blocks.push([]);
    else if (blocks.length > 0 && !/^\s+at /.test(line)) blocks[blocks.length - 1].push(line);
  }
  return blocks.flatMap((b) => {
    const kept = b.filter((l, i) => l.trim() !== '' || (i > 0 && b[i - 1].trim() !== ''));
    return kept.length > DIGEST_LINES_PER_TEST ? [...kept.slice(0, DIGEST_LINES_PER_TEST), `  … ${kept.length - DIGEST_LINES_PER_TEST} more lines in the lane's output above`] : kept;
  });
}

for (const r of results) {
  const digest = r.code === 0 ? [] : failureDigest(r.text);
  if (digest.length > 0) console.log(`\n── failures in lane ${r.lane.name}, again (each cut to ${DIGEST_LINES_PER_TEST} lines) ──\n${digest.join('\n')}\n`);
}

let passed = 0;
let failed = 0;
let skipped = 0;
for (const r of results) {
  const p = count(r.text, 'pass');
  const f = count(r.text, 'fail') + count(r.text, 'cancelled');
  passed += p;
  failed += f;
  skipped += count(r.text, 'skipped') + count(r.text, 'todo');
  // a lane that died without a summary still fails the run
  if (r.code !== 0 && f === 0) failed += 1;
  console.log(`lane ${r.lane.name}: ${p} passed, ${f} failed (exit ${r.code}), ${r.seconds.toFixed(0)} s`);
}
console.log(`wall time ${((Date.now() - started) / 1000).toFixed(0)} s`);
console.log(`tests: ${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(results.some((r) => r.code !== 0) ? 1 : 0);
