// Who a request acts as, in the commands it proposes (docs/security.md "Sessions belong to
// their token"): the session it names, with the principal the state machine must match
// against the session's opener, or a new session the leader draws for it.
import { randomFillSync } from 'node:crypto';
import type { NewSessionSpec } from '../../lock-fsm/index.js';
import { isSessionId } from '../../lock-fsm/index.js';
import type { Failure } from '../../api/failure.js';
import type { RequestContext } from '../../api/service.js';
import { ok, refused, type Result } from '../../api/service-result.js';
import { permissionDenied, sessionNotFound } from '../../api/result-errors.js';
import type { ServiceDeps } from '../leader/service-deps.js';

/** Random bytes for session ids, drawn 4 KiB at a time: a randomBytes(16) per id cost the
 *  leader ~6 µs of CPU (1.8 % of its busy time under session churn), a slice of this pool
 *  ~0.15 µs (BENCHMARKS.md "Tenth round"); node's randomUUID caches its entropy the same
 *  way. Each id's bytes are zeroed once taken, so the pool never holds an id in use. */
const ID_BYTES = 16;
const idPool = Buffer.alloc(256 * ID_BYTES);
let idPoolAt = idPool.length;

/** 128 random bits drawn by the leader: session ids are capabilities (docs/security.md). */
export function newSessionId(): string {
  if (idPoolAt + ID_BYTES > idPool.length) {
    randomFillSync(idPool);
    idPoolAt = 0;
  }
  const id = idPool.toString('hex', idPoolAt, idPoolAt + ID_BYTES);
  idPool.fill(0, idPoolAt, idPoolAt + ID_BYTES);
  idPoolAt += ID_BYTES;
  return id;
}

/** The principal the FSM must match against the session's opener, or undefined when
 *  auth is off or the caller's token has `admin` over `name`. */
function actorOf(d: Pick<ServiceDeps, 'mayActForOthers'>, ctx: RequestContext, name: string | undefined): string | undefined {
  const p = ctx.principal;
  if (p === undefined || !d.mayActForOthers || d.mayActForOthers(p, name)) return undefined;
  return p;
}

/** `cmd` with the actor it must be checked as, when there is one (actorOf) */
export function asActor<C extends { sessionId: string; actor?: string }>(d: Pick<ServiceDeps, 'mayActForOthers'>, cmd: C, ctx: RequestContext, name: string | undefined): C {
  const actor = actorOf(d, ctx, name);
  if (actor !== undefined) cmd.actor = actor;
  return cmd;
}

/** keepalive/renew are not logged: the same ownership rule, checked on applied state
 *  after the read barrier (so the session is as current as the barrier's index).
 *  Returns the refusal, or undefined when the caller may act on the session. */
export function ownerRefusal(d: Pick<ServiceDeps, 'mayActForOthers'>, sessionPrincipal: string | undefined, ctx: RequestContext, name: string | undefined): Failure | undefined {
  const actor = actorOf(d, ctx, name);
  return actor !== undefined && actor !== (sessionPrincipal ?? '') ? permissionDenied() : undefined;
}

/** The session part of an acquire, semaphore acquire or campaign of `name`: the request's
 *  own session (its id checked, with the actor), or a new one drawn here whose principal
 *  is the caller. */
export function requester(
  d: Pick<ServiceDeps, 'session' | 'mayActForOthers'>,
  p: { sessionId?: string; ttlMs?: number; owner?: string },
  ctx: RequestContext,
  name: string,
): Result<{ sessionId: string; newSession?: NewSessionSpec; actor?: string }> {
  if (p.sessionId === undefined) return ok(newSessionFor(d, p, ctx));
  if (!isSessionId(p.sessionId)) return refused(sessionNotFound(p.sessionId));
  return ok(asActor(d, { sessionId: p.sessionId }, ctx, name));
}

/** A new session for a request that named none: its id drawn here, the request's ttl (or
 *  the default) and owner, the caller as its principal. */
export function newSessionFor(d: Pick<ServiceDeps, 'session'>, p: { ttlMs?: number; owner?: string }, ctx: RequestContext): { sessionId: string; newSession: NewSessionSpec } {
  const newSession: NewSessionSpec = { ttlMs: p.ttlMs ?? d.session.defaultTtlMs, owner: p.owner ?? '', lockDelayMs: d.session.lockDelayMs };
  if (ctx.principal !== undefined) newSession.principal = ctx.principal;
  return { sessionId: newSessionId(), newSession };
}
