// The joining side of `raftlock serve --join URL` (docs/membership.md). The node first
// learns the members' peer URLs (GET URL/v1/cluster) — its transport accepts messages
// only from peers it knows, so it must know the leader before the leader's appends and
// snapshot arrive — then asks to be added (POST URL/v1/cluster/members, relayed to the
// leader), which adds it as a learner marked for promotion and answers once that entry
// commits; the leader promotes it to voter by itself once it has caught up. Every step is
// idempotent, so transient failures (no leader, 503/504, another change in progress: 409)
// are retried with backoff until the node is a member or stops. A node that was already
// added (`raftlock member add` first, etcd's order) gets the same answer at once.
import type { Logger } from 'pino';
import type { ClusterView } from '../../api/service.js';
import type { MemberAddress } from '../app/lock-app.js';

export interface JoinOptions {
  /** API URL of any member of the cluster */
  url: string;
  self: MemberAddress;
  /** bearer token with the admin right, when the cluster has auth on (RAFTLOCK_TOKEN) */
  token?: string;
  learn(members: readonly MemberAddress[]): void;
  logger: Logger;
  signal: AbortSignal;
  /** per request (the leader answers once the learner entry commits) */
  requestTimeoutMs?: number;
}

export class JoinError extends Error {}
/** a refusal that retrying cannot fix */
export class PermanentJoinError extends JoinError {}

/** GET URL/v1/cluster: the cluster's name and members as that node sees them. */
export async function fetchClusterView(url: string, o: { token?: string; timeoutMs?: number; signal?: AbortSignal } = {}): Promise<ClusterView> {
  const signals = [AbortSignal.timeout(o.timeoutMs ?? 5000), ...(o.signal ? [o.signal] : [])];
  const res = await fetch(`${url.replace(/\/$/, '')}/v1/cluster`, { headers: authHeader(o.token), signal: AbortSignal.any(signals) });
  const body = (await res.json().catch(() => null)) as ClusterView | { error?: { message?: string } } | null;
  if (res.status !== 200 || !body || !('members' in body) || !Array.isArray(body.members)) {
    const msg = body && 'error' in body ? body.error?.message : undefined;
    const text = `GET ${url}/v1/cluster answered ${res.status}${msg ? `: ${msg}` : ''}`;
    throw PERMANENT.has(res.status) ? new PermanentJoinError(text) : new JoinError(text);
  }
  return body;
}

/** Statuses that retrying cannot fix: bad request, auth, unknown route, body problems. */
const PERMANENT = new Set([400, 401, 403, 404, 413, 415]);

/** Resolves once this node is a member (a learner the leader will promote, or already a
 *  voter); rejects with JoinError on a permanent refusal. */
export async function joinCluster(o: JoinOptions): Promise<ClusterView> {
  let backoffMs = 200;
  let attempt = 0;
  while (!o.signal.aborted) {
    attempt++;
    try {
      const view = await fetchClusterView(o.url, { signal: o.signal, ...(o.token ? { token: o.token } : {}) });
      o.learn(view.members.filter((m) => m.peer !== ''));
      const res = await fetch(`${o.url.replace(/\/$/, '')}/v1/cluster/members`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...authHeader(o.token) },
        body: JSON.stringify({ id: o.self.id, api: o.self.api, peer: o.self.peer }),
        signal: AbortSignal.any([AbortSignal.timeout(o.requestTimeoutMs ?? 30_000), o.signal]),
      });
      const body = (await res.json().catch(() => null)) as (ClusterView & { error?: { code?: string; message?: string; conflict?: string } }) | null;
      if (res.status === 200 && body && Array.isArray(body.members)) {
        o.learn(body.members.filter((m) => m.peer !== ''));
        return body;
      }
      const msg = body?.error?.message ?? `HTTP ${res.status}`;
      if (PERMANENT.has(res.status) || body?.error?.conflict === 'addresses') throw new PermanentJoinError(`the cluster refused to add ${o.self.id}: ${msg}`);
      o.logger.info({ attempt, status: res.status, reason: msg }, 'join: not added yet; retrying');
    } catch (err) {
      if (err instanceof PermanentJoinError) throw err;
      if (o.signal.aborted) break;
      o.logger.info({ attempt, err: (err as Error).message }, 'join: cluster not reachable or not ready; retrying');
    }
    await sleep(backoffMs, o.signal);
    backoffMs = Math.min(2000, backoffMs * 2);
  }
  throw new JoinError('join abandoned: the node is stopping');
}

function authHeader(token: string | undefined): Record<string, string> {
  return token ? { authorization: `Bearer ${token}` } : {};
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done(): void {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
