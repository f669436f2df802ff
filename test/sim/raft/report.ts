// How a failing schedule is reported: every option (SEED= first), the trace tail, what
// broke, and the command that replays it.
import { DEFAULT_TICKS, describeOptions } from '../options.js';
import type { ScheduleResult } from './simulate.js';
import type { Mutation } from './mutations.js';

/** the command that replays a schedule */
export function reproduceCommand(seed: number, ticks: number, mutations: readonly Mutation[]): string {
  return `npm run sim -- --seed ${seed}${ticks !== DEFAULT_TICKS ? ` --ticks ${ticks}` : ''}${mutations.length > 0 ? ` --mutation ${mutations.join(',')}` : ''}`;
}

export function formatFailure(r: ScheduleResult): string {
  const f = r.failure!;
  return [
    describeOptions(r.options),
    ...(r.trace.length > 0 ? ['trace (last lines):', ...r.trace.map((l) => `  ${l}`)] : []),
    `FAILED ${f.kind} in phase ${f.phase} at tick ${f.tick}: ${f.message}`,
    ...(f.stack ? [f.stack] : []),
    `SEED=${r.seed}`,
    `reproduce: ${reproduceCommand(r.seed, r.options.ticks, r.options.mutations)}`,
  ].join('\n');
}
