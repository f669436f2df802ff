// The reference models' rule for Idempotency-Keys bound to their request, written from
// docs/lock-fsm.md "Idempotency", not from idempotency.ts: a key answers a retry only
// for the same command kind and name (a session close: its session; a session open:
// none), the same principal and the same body digest; a part an entry does not carry
// (an envelope without keyBinding) is not compared. Anything else is refused, naming
// the first part that differs in the order principal, operation, name, body.
import fc from 'fast-check';
import type { ApplyResult, Command, Envelope, KeyBinding } from '../../src/lock-fsm/index.js';
import type { BindingTuple } from '../../src/lock-fsm/snapshot.js';

export interface ModelBinding { kind: string; target: string; principal: string | null; digest: string | null }

export function modelBinding(env: Envelope): ModelBinding {
  const c = env.cmd as Command & { name?: string; sessionId?: string };
  const target = c.kind === 'openSession' ? '' : c.name ?? c.sessionId ?? '';
  return { kind: c.kind, target, principal: env.keyBinding?.principal ?? null, digest: env.keyBinding?.digest ?? null };
}

/** null: the same request (replay); else the refusal */
export function modelReuse(first: ModelBinding, now: ModelBinding): ApplyResult | null {
  const known = (a: string | null, b: string | null): boolean => a !== null && b !== null;
  let differs: 'principal' | 'operation' | 'name' | 'body' | null = null;
  if (known(first.principal, now.principal) && first.principal !== now.principal) differs = 'principal';
  else if (first.kind !== now.kind) differs = 'operation';
  else if (first.target !== now.target) differs = 'name';
  else if (known(first.digest, now.digest) && first.digest !== now.digest) differs = 'body';
  return differs === null ? null : { ok: false, code: 'idempotency_key_reused', differs };
}

export function bindingTuple(b: ModelBinding): BindingTuple {
  return [b.kind, b.target, b.principal, b.digest];
}

/** a key's binding for the property tests: two principals (one anonymous) and two bodies,
 *  absent one time in five (an entry of a version before bindings) */
export const bindingArb: fc.Arbitrary<KeyBinding | undefined> = fc.oneof(
  { weight: 1, arbitrary: fc.constant(undefined) },
  { weight: 4, arbitrary: fc.record({ principal: fc.constantFrom('', 'alice'), digest: fc.constantFrom('0'.repeat(32), 'f'.repeat(32)) }) },
);

/** the envelope of a step (keyBinding only with a key) */
export function envelopeOf(atMs: number, s: { cmd: Command; key?: string; binding?: KeyBinding }): Envelope {
  if (s.key === undefined) return { atMs, cmd: s.cmd };
  return s.binding === undefined ? { atMs, idempotencyKey: s.key, cmd: s.cmd } : { atMs, idempotencyKey: s.key, keyBinding: s.binding, cmd: s.cmd };
}
