// Test helpers: a tiny "log" that feeds an FSM consecutive indexes and a controllable
// log clock, and a msgpack codec configured like the node's.
import { Packr } from 'msgpackr';
import { LockFsm, type ApplyOutput, type ApplyResult, type Command, type LockFsmOptions } from '../../src/lock-fsm/index.js';

const packr = new Packr({ useRecords: false, structuredClone: false, moreTypes: false, bundleStrings: false });
export const encode = (v: unknown): Uint8Array => packr.pack(v);
export const decode = (b: Uint8Array): unknown => packr.unpack(b);

export class Log {
  index = 0;
  atMs = 1_700_000_000_000;
  readonly fsm: LockFsm;
  constructor(opts: LockFsmOptions = {}) {
    this.fsm = new LockFsm(opts);
  }
  /** applies cmd at the next index (or `index`), returns result + events */
  run(cmd: Command, o: { key?: string; index?: number; atMs?: number } = {}): ApplyOutput {
    this.index = o.index ?? this.index + 1;
    if (o.atMs !== undefined) this.atMs = o.atMs;
    const env = o.key === undefined ? { atMs: this.atMs, cmd } : { atMs: this.atMs, idempotencyKey: o.key, cmd };
    return this.fsm.apply(this.index, env);
  }
  do(cmd: Command, o: { key?: string; index?: number; atMs?: number } = {}): ApplyResult {
    return this.run(cmd, o).result;
  }
  open(sessionId: string, o: { ttlMs?: number; owner?: string; lockDelayMs?: number } = {}): void {
    const r = this.do({ kind: 'openSession', sessionId, ttlMs: o.ttlMs ?? 10_000, owner: o.owner ?? `owner-${sessionId}`, lockDelayMs: o.lockDelayMs ?? 0 });
    if (!r.ok) throw new Error(`open ${sessionId}: ${r.code}`);
  }
  acquire(name: string, sessionId: string, waitMs = 0, owner?: string): ApplyResult {
    return this.do(owner === undefined ? { kind: 'acquire', name, sessionId, waitMs } : { kind: 'acquire', name, sessionId, waitMs, owner });
  }
  /** the fencing token of a successful acquire (throws otherwise) */
  token(name: string, sessionId: string): number {
    const r = this.acquire(name, sessionId);
    if (!r.ok || r.kind !== 'acquired') throw new Error(`acquire ${name} by ${sessionId}: ${JSON.stringify(r)}`);
    return r.fencingToken;
  }
}
