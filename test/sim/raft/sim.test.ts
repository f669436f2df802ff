// The simulation sweep for `npm test`: SIM_SCHEDULES (default 2,000) seeded schedules of
// SIM_TICKS (default 2,000) fault ticks each, plus the liveness (and, for Howard's
// partition, stability) phases, spread over worker threads. The base seed is fixed so CI
// is reproducible; SIM_SEED=N moves the window, SIM_SEED=random draws a fresh one.
// SIM_MUTATIONS=name[,name] switches safety fixes off (mutations.ts): the sweep must then fail.
// Any failing seed is printed with its options, trace tail and `npm run sim -- --seed N`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { availableParallelism } from 'node:os';
import { sweep } from '../sweep.js';
import { raftSweep } from './seed.js';
import { runSchedule } from './simulate.js';
import { DEFAULT_TICKS } from '../options.js';
import { envInt } from '../../support/env.js';
import { testSeed } from '../../support/seed.js';
import { parseMutations } from './mutations.js';

const schedules = envInt('SIM_SCHEDULES', 2000);
const ticks = envInt('SIM_TICKS', DEFAULT_TICKS);
const base = testSeed('SIM_SEED', { what: 'simulation sweep (first seed)', fallback: 1 });
const mutations = parseMutations(process.env['SIM_MUTATIONS']);

test(`simulation: ${schedules} seeded schedules of ${ticks} fault ticks from SEED=${base}${mutations.length > 0 ? ` with mutations ${mutations.join(',')}` : ''}`, { timeout: 20 * 60_000 }, async () => {
  // every core: under scripts/run-tests.mjs this lane runs niced beside the process lane
  const workers = Math.max(1, Math.min(availableParallelism(), 8));
  const r = await sweep(raftSweep({ ticks, mutations }), { from: base, count: schedules, jobs: workers });
  const t = (k: string): number => r.totals.get(k) ?? 0;
  console.log(`sim: ${r.seeds} schedules, ${t('ticks')} ticks (${(t('ticks') / r.seeds).toFixed(0)} per schedule), ` +
    `${t('committed')} entries committed, ${t('diskStalls')} disk stalls, ${t('coverHeartbeats')} cover heartbeats, ${r.failures.length} failed, ${r.wallS.toFixed(1)} s wall on ${workers} worker(s), ` +
    `seeds ${base}..${base + schedules - 1}`);
  for (const f of r.failures) console.log(`\n${f.report}\n`);
  assert.equal(r.seeds, schedules);
  assert.deepEqual(r.failures.map((f) => f.seed), [], 'failing seeds (reports above)');
  // the driver's heartbeat cover (production's) must actually run: some writes stall
  if (schedules >= 100) assert.ok(t('diskStalls') > 0 && t('coverHeartbeats') > 0, `${t('diskStalls')} disk stalls, ${t('coverHeartbeats')} cover heartbeats`);
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
