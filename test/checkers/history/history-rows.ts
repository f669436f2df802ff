// Hand-built histories for the checkers' unit tests: one row per operation,
// [process, f, input, invoke time, outcome, output, completion time], paired as a run's
// recorder would pair them (history.ts pairOps).
import { pairOps, type HistoryEvent, type Op } from './history.js';

export type HistoryRow = [string, HistoryEvent['f'], HistoryEvent['value'], number, 'ok' | 'fail' | 'info', HistoryEvent['value'], number];

export function ops(rows: HistoryRow[]): Op[] {
  const ev: HistoryEvent[] = [];
  rows.forEach(([p, f, input, t0, type, output, t1], i) => {
    ev.push({ process: p, id: `${p}:${i}`, type: 'invoke', f, value: input, t: t0 });
    ev.push({ process: p, id: `${p}:${i}`, type, f, value: output, t: t1 });
  });
  return pairOps(ev.sort((a, b) => a.t - b.t));
}
