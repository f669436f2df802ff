// Revocation (docs/contract.md §4 "Revocation and maximum hold"): one command ends a
// lock's or a semaphore's grants, one session's or all of them. The route checked `admin`
// on the name.
import { isSessionId } from '../../lock-fsm/index.js';
import { Failure } from '../../api/failure.js';
import type { RequestContext, RevokedView } from '../../api/service.js';
import { ok, refused, settled, type Result } from '../../api/service-result.js';
import type { LeaderLog } from '../leader/leader-log.js';
import { resultError, sessionNotFound } from '../../api/result-errors.js';

export function revokeGrants(log: LeaderLog, target: 'lock' | 'semaphore', name: string, sessionId: string | undefined, ctx: RequestContext): Promise<Result<RevokedView>> {
  return settled(async () => {
    if (sessionId !== undefined && !isSessionId(sessionId)) return refused(sessionNotFound(sessionId));
    const cmd = sessionId === undefined ? { kind: 'revoke' as const, target, name } : { kind: 'revoke' as const, target, name, sessionId };
    const r = await log.submit(cmd, ctx, { op: `${target}.revoke`, name, body: { session_id: sessionId } });
    if (r.ok && r.kind === 'revoked') return ok({ name: r.name, revoked: r.revoked.map((g) => ({ session_id: g.sessionId, fencing_token: g.fencingToken })) });
    if (!r.ok && r.code === 'not_holder') return refused(new Failure('not_holder', `session ${sessionId ?? ''} holds no grant of ${target} ${name}`));
    return refused(resultError(r));
  });
}
