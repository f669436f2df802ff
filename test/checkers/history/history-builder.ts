// Hand-written histories for the checkers' tests: `add` one operation (invoke and, unless
// its type is null, its completion), then `ops()` pairs them as a run's history would be.
import { pairOps, type HistoryEvent, type Op } from './history.js';

export class H {
  private events: HistoryEvent[] = [];
  private n = 0;
  add(process: string, f: HistoryEvent['f'], input: HistoryEvent['value'], t0: number, type: 'ok' | 'fail' | 'info' | null, output: HistoryEvent['value'], t1: number): this {
    const id = `${process}:${this.n++}`;
    this.events.push({ process, id, type: 'invoke', f, value: input, t: t0 });
    if (type) this.events.push({ process, id, type, f, value: output, t: t1 });
    return this;
  }
  ops(): Op[] {
    return pairOps([...this.events].sort((a, b) => a.t - b.t));
  }
}
