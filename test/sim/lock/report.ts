// A failing lock schedule's report: what broke, the trace tail, and how to replay it.
import { DEFAULT_LOCK_TICKS, type LockScheduleResult } from './simulate.js';

export function formatLockFailure(r: LockScheduleResult, ticks: number): string {
  const f = r.failure!;
  return [
    `SEED=${r.seed} FAILED in the ${r.phase} phase at tick ${r.ticks}: ${f.kind}`,
    f.message,
    ...(f.stack ? [f.stack] : []),
    'trace tail:',
    ...r.trace.slice(-40).map((l) => `  ${l}`),
    `reproduce: npm run sim:lock -- --seed ${r.seed}${ticks !== DEFAULT_LOCK_TICKS ? ` --ticks ${ticks}` : ''}`,
  ].join('\n');
}
