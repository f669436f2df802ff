// Revocation (docs/contract.md §4 "Revocation and maximum hold"): one command ends a
// lock's or a semaphore's grants, one session's or all of them. The route checked `admin`
// on the name.
import { isSessionId } from '../../lock-fsm/index.js';
import { Failure } from '../../api/failure.js';
import type { RequestContext, RevokedView } from '../../api/service.js';
import type { LeaderLog } from '../leader/leader-log.js';
import { resultError, sessionNotFound } from '../../api/result-errors.js';

export async function revokeGrants(log: LeaderLog, target: 'lock' | 'semaphore', name: string, sessionId: string | undefined, ctx: RequestContext): Promise<RevokedView> {
  if (sessionId !== undefined && !isSessionId(sessionId)) throw sessionNotFound(sessionId);
  const cmd = sessionId === undefined ? { kind: 'revoke' as const, target, name } : { kind: 'revoke' as const, target, name, sessionId };
  const r = await log.submit(cmd, ctx, { op: `${target}.revoke`, name, body: { session_id: sessionId } });
  if (r.ok && r.kind === 'revoked') return { name: r.name, revoked: r.revoked.map((g) => ({ session_id: g.sessionId, fencing_token: g.fencingToken })) };
  if (!r.ok && r.code === 'not_holder') throw new Failure('not_holder', `session ${sessionId ?? ''} holds no grant of ${target} ${name}`);
  throw resultError(r);
}
