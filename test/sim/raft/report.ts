// How a failing schedule is reported: every option (SEED= first), the trace tail, what
// broke, and the command that replays it.
import { describeOptions } from '../options.js';
import type { ScheduleResult } from './simulate.js';

export function formatFailure(r: ScheduleResult): string {
  const f = r.failure!;
  return [
    describeOptions(r.options),
    ...(r.trace.length > 0 ? ['trace (last lines):', ...r.trace.map((l) => `  ${l}`)] : []),
    `FAILED ${f.kind} in phase ${f.phase} at tick ${f.tick}: ${f.message}`,
    ...(f.stack ? [f.stack] : []),
    `SEED=${r.seed}`,
    `reproduce: npm run sim -- --seed ${r.seed}${r.options.ticks !== 2000 ? ` --ticks ${r.options.ticks}` : ''}${r.options.mutations.length > 0 ? ` --mutation ${r.options.mutations.join(',')}` : ''}`,
  ].join('\n');
}
