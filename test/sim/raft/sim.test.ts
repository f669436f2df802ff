// The simulation sweep for `npm test`: SIM_SCHEDULES (default 2,000) seeded schedules of
// SIM_TICKS (default 2,000) fault ticks each, plus the liveness (and, for Howard's
// partition, stability) phases, spread over worker threads. The base seed is fixed so CI
// is reproducible; SIM_SEED=N moves the window, SIM_SEED=random draws a fresh one.
// SIM_MUTATIONS=name[,name] switches safety fixes off (mutations.ts): the sweep must then fail.
// Any failing seed is printed with its options, trace tail and `npm run sim -- --seed N`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { availableParallelism } from 'node:os';
import { runPool } from './pool.js';
import { runSchedule } from './simulate.js';
import { envInt } from '../../support/env.js';
import { testSeed } from '../../support/seed.js';
import { parseMutations } from './mutations.js';

const schedules = envInt('SIM_SCHEDULES', 2000);
const ticks = envInt('SIM_TICKS', 2000);
const base = testSeed('SIM_SEED', { what: 'simulation sweep (first seed)', fallback: 1 });
const mutations = parseMutations(process.env['SIM_MUTATIONS']);

test(`simulation: ${schedules} seeded schedules of ${ticks} fault ticks from SEED=${base}${mutations.length > 0 ? ` with mutations ${mutations.join(',')}` : ''}`, { timeout: 20 * 60_000 }, async () => {
  // every core: under scripts/run-tests.mjs this lane runs niced beside the process lane
  const workers = Math.max(1, Math.min(availableParallelism(), 8));
  const started = performance.now();
  // chunks small enough to balance the lanes (schedule lengths vary with their options)
  const total = await runPool(base, schedules, ticks, workers, Math.max(1, Math.ceil(schedules / (workers * 8))), undefined, mutations);
  const secs = (performance.now() - started) / 1000;
  console.log(`sim: ${total.schedules} schedules, ${total.ticks} ticks (${(total.ticks / total.schedules).toFixed(0)} per schedule), ` +
    `${total.committed} entries committed, ${total.diskStalls} disk stalls, ${total.coverHeartbeats} cover heartbeats, ${total.failures.length} failed, ${secs.toFixed(1)} s wall on ${workers} worker(s), ` +
    `seeds ${base}..${base + schedules - 1}`);
  total.failures.sort((a, b) => a.seed - b.seed);
  for (const f of total.failures) console.log(`\n${f.report}\n`);
  assert.equal(total.schedules, schedules);
  assert.deepEqual(total.failures.map((f) => f.seed), [], 'failing seeds (reports above)');
  // the driver's heartbeat cover (production's) must actually run: some writes stall
  if (schedules >= 100) assert.ok(total.diskStalls > 0 && total.coverHeartbeats > 0, `${total.diskStalls} disk stalls, ${total.coverHeartbeats} cover heartbeats`);
});

test('a seed replays exactly: same trace, same statistics', () => {
  for (const seed of [base, base + 1, base + 2]) {
    const a = runSchedule(seed, { ticks: 500, traceLines: 100_000 });
    const b = runSchedule(seed, { ticks: 500, traceLines: 100_000 });
    assert.ok(a.trace.length > 0);
    assert.deepEqual(b.trace, a.trace, `SEED=${seed}`);
    assert.deepEqual(b.stats, a.stats, `SEED=${seed}`);
    assert.equal(b.ticks, a.ticks);
  }
});
