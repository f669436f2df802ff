// What an Idempotency-Key is bound to (docs/api.md "Idempotency", docs/lock-fsm.md
// "Idempotency"): the principal that sent the request, and a digest of the request's
// canonical form — the operation, the name and the body as the client sent it. The state
// machine compares kind and name from the command itself and principal and digest from
// the envelope (Envelope.keyBinding); it cannot compute the digest, because it sees the
// resolved command, not the request.
//
// The canonical form must be the same wherever the same request is served: sent again to
// another node after a 504, or relayed by a follower to the leader (which parses the
// relayed body itself). So it holds only what the client sent, after the route's
// validation, and the defaults the CONTRACT fixes (permits 1, mode
// exclusive); never a node's own defaults (default ttl, lock-delay), which two nodes may
// not share during a configuration change, nor anything the leader draws (a new
// session's id). Nor `wait_ms`: it says how long the caller will wait for the answer, and
// a retry asks only for the wait that is left (every SDK does: docs/client.md), so a
// retry's wait_ms is smaller than the first attempt's by design.
import { createHash } from 'node:crypto';
import type { KeyBinding } from '../../lock-fsm/index.js';
import type { RequestContext } from '../../api/service.js';

/** a body field's value: what the routes' validation yields; undefined = not sent */
export type RequestField = string | number | boolean | undefined;

/** one mutating request, in the contract's terms */
export interface KeyedRequest {
  /** the operation: `lock.acquire`, `semaphore.revoke`, `session.open`, … */
  op: string;
  /** the lock, semaphore or election name; the session id for a session close; '' for a
   *  session open */
  name: string;
  /** the body's fields by their contract names (`session_id`, `ttl_ms`, …) */
  body: Readonly<Record<string, RequestField>>;
}

/** bump when the canonical form changes: the digest of the same request then changes,
 *  and a retry across an upgrade is refused, so say so in docs/api.md */
const FORM = 'raftlock.request.v1';

/**
 * The canonical form: a JSON array [FORM, op, name, [[field, value]…]] with the fields
 * sorted by name and the ones not sent left out. JSON.stringify of a string or a safe
 * integer has one spelling (-0 is written 0), so equal requests give equal text whatever
 * the order or the spacing of the client's JSON.
 */
export function canonicalRequest(r: KeyedRequest): string {
  const fields: [string, string | number | boolean][] = [];
  for (const k of Object.keys(r.body).sort()) {
    const v = r.body[k];
    if (v === undefined) continue;
    if (typeof v === 'number' && !Number.isSafeInteger(v)) throw new Error(`request field ${k} is not a safe integer (${v}): the routes validate every number`);
    fields.push([k, v]);
  }
  return JSON.stringify([FORM, r.op, r.name, fields]);
}

/** SHA-256 of the canonical form, its first 128 bits in hex: collisions are out of reach,
 *  and a key's table entry stays small */
export function requestDigest(r: KeyedRequest): string {
  return createHash('sha256').update(canonicalRequest(r), 'utf8').digest('hex').slice(0, 32);
}

/** the binding of a keyed request: its principal ('' when auth is off) and digest */
export function keyBinding(ctx: Pick<RequestContext, 'principal'>, r: KeyedRequest): KeyBinding {
  return { principal: ctx.principal ?? '', digest: requestDigest(r) };
}
