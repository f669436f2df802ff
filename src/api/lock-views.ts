// The lock state machine's lock views in the REST contract's terms (src/api/service.ts).
import type { HolderInfo, LockInfo } from '../lock-fsm/index.js';
import type { GrantView, HolderView, LockView } from './service.js';

export function holderView(h: HolderInfo): HolderView {
  return { session_id: h.sessionId, owner: h.owner, fencing_token: h.fencingToken };
}

export function lockView(l: LockInfo): LockView {
  const v: LockView = { name: l.name, held: l.held, waiters: l.waiters };
  if (l.holder) v.holder = holderView(l.holder);
  if (l.mode) v.mode = l.mode;
  if (l.holders) v.holders = l.holders.map((h) => ({ session_id: h.sessionId, owner: h.owner, fencing_token: h.fencingToken, mode: h.mode }));
  return v;
}

/** `v` with max_hold_ms when the grant has a maximum hold (`left`: LockFsm.holdLeftMs) */
export function withHold<T extends { max_hold_ms?: number }>(v: T, left: number | undefined): T {
  if (left !== undefined) v.max_hold_ms = left;
  return v;
}

/** the session's grant of the lock, in either mode */
export function grantOf(l: LockInfo, sessionId: string): { fencingToken: number; mode: 'exclusive' | 'shared' } | undefined {
  return l.holders?.find((h) => h.sessionId === sessionId);
}

export function grantView(name: string, sessionId: string, token: number, ttlMs: number, mode: 'exclusive' | 'shared'): GrantView {
  const g: GrantView = { name, session_id: sessionId, fencing_token: token, ttl_ms: ttlMs };
  if (mode === 'shared') g.mode = 'shared';
  return g;
}
