// `raftlock status`: the cluster as one table (members, roles, term, commit/applied, lag).
import type { ClusterView } from '../api/service.js';

export async function fetchCluster(endpoints: string[], timeoutMs = 2000): Promise<{ endpoint: string; view: ClusterView }> {
  const errors: string[] = [];
  for (const ep of endpoints) {
    try {
      const res = await fetch(`${ep.replace(/\/$/, '')}/v1/cluster`, { signal: AbortSignal.timeout(timeoutMs) });
      if (res.status === 200) return { endpoint: ep, view: (await res.json()) as ClusterView };
      errors.push(`${ep}: HTTP ${res.status}`);
    } catch (err) {
      errors.push(`${ep}: ${(err as Error).message}`);
    }
  }
  throw new Error(`no endpoint answered (${errors.join('; ')})`);
}

/** Ask every member for its own view, so each row shows that node's term and indexes. */
export async function clusterTable(endpoints: string[]): Promise<string> {
  const { view } = await fetchCluster(endpoints);
  const rows = await Promise.all(
    view.members.map(async (m) => {
      try {
        const { view: v } = await fetchCluster([m.api], 1000);
        const leaderMember = view.members.find((x) => x.id === view.leader_id);
        const lag = m.lag ?? (leaderMember ? Math.max(0, view.commit_index - v.applied_index) : undefined);
        return [m.id, v.role, String(v.term), String(v.commit_index), String(v.applied_index), lag === undefined ? '-' : String(lag), m.api];
      } catch {
        return [m.id, 'unreachable', '-', '-', '-', '-', m.api];
      }
    }),
  );
  const header = ['MEMBER', 'ROLE', 'TERM', 'COMMIT', 'APPLIED', 'LAG', 'API'];
  const table = [header, ...rows];
  const widths = header.map((_, i) => Math.max(...table.map((r) => r[i]!.length)));
  const lines = table.map((r) => r.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd());
  return [`leader: ${view.leader_id ?? 'none'}  term: ${view.term}`, ...lines].join('\n');
}
