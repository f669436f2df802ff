// Shared pieces for the transport tests: a log-capturing logger, polling with a
// deadline, a dead port, and pairs of real HttpTransports on 127.0.0.1 (port 0).
import { createServer } from 'node:net';
import type { Message, NodeId } from '../../src/raft/core/types.js';
import { HttpTransport, type HttpTransportOptions } from '../../src/transport/http-transport.js';

export interface LogLine {
  level: 'warn' | 'info' | 'error' | 'debug';
  obj: object;
  msg: string | undefined;
}

export function captureLogger(): HttpTransportOptions['logger'] & { lines: LogLine[] } {
  const lines: LogLine[] = [];
  const at = (level: LogLine['level']) => (obj: object, msg?: string) => void lines.push({ level, obj, msg });
  return { lines, warn: at('warn'), info: at('info'), error: at('error'), debug: at('debug') };
}

/** poll `cond` every few ms until it holds, or fail after `timeoutMs` */
export async function waitFor(cond: () => boolean, what: string, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** a loopback port that nothing listens on (bound, then released) */
export async function deadPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const a = srv.address();
      const port = typeof a === 'object' && a ? a.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

export type Extra = Partial<Omit<HttpTransportOptions, 'self' | 'cluster' | 'listen' | 'peers' | 'logger'>>;

export interface Node {
  id: NodeId;
  t: HttpTransport;
  url: string;
  inbox: Message[];
  unreachable: NodeId[];
  snapshotStatus: [NodeId, boolean][];
  log: ReturnType<typeof captureLogger>;
}

/** start transports for `ids` and introduce them to each other; close with closeAll */
export async function startNodes(ids: NodeId[], extra: Extra | ((id: NodeId) => Extra) = {}, cluster = 'test'): Promise<Node[]> {
  const nodes: Node[] = [];
  try {
    for (const id of ids) {
      const log = captureLogger();
      const t = new HttpTransport({ self: id, cluster, listen: { host: '127.0.0.1', port: 0 }, peers: new Map(), logger: log, ...(typeof extra === 'function' ? extra(id) : extra) });
      const n: Node = { id, t, url: '', inbox: [], unreachable: [], snapshotStatus: [], log };
      nodes.push(n);
      await t.start();
      n.url = `http://127.0.0.1:${t.address().port}`;
      t.onMessage((m) => n.inbox.push(m));
      t.onUnreachable((p) => n.unreachable.push(p));
      t.onSnapshotStatus((p, ok) => n.snapshotStatus.push([p, ok]));
    }
    const peers = new Map(nodes.map((n) => [n.id, n.url]));
    for (const n of nodes) n.t.setPeers(peers);
    return nodes;
  } catch (err) {
    await closeAll(nodes);
    throw err;
  }
}

export async function closeAll(nodes: Node[]): Promise<void> {
  await Promise.all(nodes.map((n) => n.t.close()));
}

export const hb = (from: NodeId, to: NodeId, ctx: number, term = 1): Message => ({ from, to, term, type: 'heartbeat', commit: 0, ctx });
