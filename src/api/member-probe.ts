// Asks every member for its own view (GET /v1/cluster) on behalf of the status page, so
// the page shows each member's role, term and indexes through whichever node served it —
// also when the browser cannot reach the other nodes. Short timeouts: a dead member
// shows as unreachable within a second instead of stalling the page.
import { Agent, request, type buildConnector } from 'undici';
import type { ClusterView } from './service.js';
import { FORWARDED_HEADER } from './forward.js';

export const PROBE_TIMEOUT_MS = 1000;
const MAX_BODY_BYTES = 1 << 20;

export interface MemberStatus {
  id: string;
  api: string;
  role: string;
  term: number | null;
  commit_index: number | null;
  applied_index: number | null;
  /** entries behind the leader (leader's view), else leader commit − member applied */
  lag: number | null;
  /** the member's own not_ready (GET /v1/cluster): why its /readyz answers 503 */
  not_ready?: string;
  error?: string;
}

export class MemberProbe {
  private readonly agent: Agent;

  /** `connect`: for https members (as the forwarder's; follows SIGHUP reloads) */
  constructor(private readonly nodeId: string, connect?: buildConnector.connector) {
    this.agent = new Agent({ connections: 4, keepAliveTimeout: 10_000, connectTimeout: PROBE_TIMEOUT_MS, ...(connect ? { connect } : {}) });
  }

  /** Every member's own view (this node's from `local`), with lag worked out. */
  async members(local: ClusterView, authorization: string | undefined, signal: AbortSignal): Promise<{ leaderId: string | null; members: MemberStatus[] }> {
    const views = await Promise.all(local.members.map(async (m): Promise<{ id: string; api: string; v?: ClusterView; err?: string }> => {
      if (m.id === local.node_id) return { id: m.id, api: m.api, v: local };
      if (!m.api) return { id: m.id, api: m.api, err: 'no API address known' };
      try {
        return { id: m.id, api: m.api, v: await this.view(m.api, authorization, signal) };
      } catch (err) {
        return { id: m.id, api: m.api, err: (err as Error).message };
      }
    }));
    const leaderView = views.find((x) => x.v?.role === 'leader')?.v;
    const members = views.map(({ id, api, v, err }): MemberStatus => {
      if (!v) return { id, api, role: 'unreachable', term: null, commit_index: null, applied_index: null, lag: null, ...(err ? { error: err } : {}) };
      const fromLeader = leaderView?.members.find((x) => x.id === id)?.lag;
      const lag = fromLeader ?? (leaderView ? Math.max(0, leaderView.commit_index - v.applied_index) : null);
      return { id, api, role: v.role, term: v.term, commit_index: v.commit_index, applied_index: v.applied_index, lag, ...(typeof v.not_ready === 'string' ? { not_ready: v.not_ready } : {}) };
    });
    return { leaderId: leaderView?.node_id ?? local.leader_id, members };
  }

  private async view(api: string, authorization: string | undefined, signal: AbortSignal): Promise<ClusterView> {
    const headers: Record<string, string> = { accept: 'application/json', [FORWARDED_HEADER]: this.nodeId };
    if (authorization) headers['authorization'] = authorization;
    const res = await request(`${api.replace(/\/$/, '')}/v1/cluster`, {
      dispatcher: this.agent,
      headers,
      signal: AbortSignal.any([signal, AbortSignal.timeout(PROBE_TIMEOUT_MS)]),
      headersTimeout: PROBE_TIMEOUT_MS,
      bodyTimeout: PROBE_TIMEOUT_MS,
    });
    const text = await readCapped(res.body);
    if (res.statusCode !== 200) throw new Error(`HTTP ${res.statusCode}`);
    const v = JSON.parse(text) as ClusterView;
    if (typeof v?.node_id !== 'string' || typeof v.term !== 'number' || !Array.isArray(v.members)) throw new Error('not a cluster view');
    return v;
  }

  async close(): Promise<void> {
    await this.agent.close().catch(() => undefined);
  }
}

async function readCapped(body: AsyncIterable<Uint8Array> & { destroy?: () => void }): Promise<string> {
  const chunks: Buffer[] = [];
  let n = 0;
  for await (const c of body) {
    n += c.length;
    if (n > MAX_BODY_BYTES) {
      body.destroy?.();
      throw new Error('answer too large');
    }
    chunks.push(Buffer.from(c));
  }
  return Buffer.concat(chunks).toString('utf8');
}
