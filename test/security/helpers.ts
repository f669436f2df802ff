// Shared fixtures for the security tests: token files, certificates (via the real
// `raftlock certs` code, so openssl must be installed), and a REST server wired with the
// real security hooks (setupSecurity) around the FakeService, for inject() tests.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { buildServer } from '../../src/api/server.js';
import { Metrics } from '../../src/metrics.js';
import { parseConfig, resolveNode } from '../../src/config.js';
import { setupSecurity, type NodeSecurity } from '../../src/security/node-security.js';
import type { Message } from '../../src/raft/core/types.js';
import { HttpTransport, type HttpTransportOptions } from '../../src/transport/http-transport.js';
import { captureLogger } from '../transport/helpers.js';
import { sha256Hex } from '../../src/security/tokens.js';
import { createCerts } from '../../src/cli/commands/certs.js';
import { FakeService } from '../api/fake-service.js';
import { LIMITS } from '../api/helpers.js';

export function haveOpenssl(): boolean {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** The test tokens: secret → rights. Names double as principals. */
export const TOKENS = {
  reader: { secret: 'tok-reader-0123456789', rights: [{ prefix: '', allow: ['read'] }] },
  billing: { secret: 'tok-billing-0123456789', rights: [{ prefix: 'billing/', allow: ['lock'] }] },
  billingAdmin: { secret: 'tok-billing-admin-0123', rights: [{ prefix: 'billing/', allow: ['admin'] }] },
  /** a second service with the same rights as billing: must not touch billing's sessions */
  billing2: { secret: 'tok-billing2-0123456789', rights: [{ prefix: 'billing/', allow: ['lock'] }] },
  ops: { secret: 'tok-ops-0123456789abcd', rights: [{ prefix: '', allow: ['admin'] }] },
} as const;
export type TokenName = keyof typeof TOKENS;

export function bearer(t: TokenName): Record<string, string> {
  return { authorization: `Bearer ${TOKENS[t].secret}` };
}

export function writeTokens(dir: string): string {
  const file = join(dir, 'tokens.json');
  const tokens = Object.entries(TOKENS).map(([name, t]) => ({ name, sha256: sha256Hex(t.secret), rights: t.rights }));
  writeFileSync(file, JSON.stringify({ tokens }, null, 2));
  return file;
}

export function tempDir(prefix: string): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), `raftlock-${prefix}-`));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** CA, node and client certificates for node ids in `dir` (the `raftlock certs` code). */
export function makeCerts(dir: string, nodes: string[], days = 2): void {
  createCerts({ out: dir, nodes, hosts: ['localhost', '127.0.0.1', '::1'], days, force: true, cluster: 'test' });
}

export const silent = pino({ level: 'silent' });

/** a minimal one-node cluster file (loopback) plus `extra` top-level fields */
export function configFor(dir: string, extra: Record<string, unknown> = {}, scheme: { api?: string; peer?: string } = {}) {
  return parseConfig({
    cluster: 'test',
    nodes: [{ id: 'n1', api: `${scheme.api ?? 'http'}://127.0.0.1:1`, peer: `${scheme.peer ?? 'http'}://127.0.0.1:2` }],
    data_dir: join(dir, 'data'),
    ...extra,
  }, join(dir, 'cluster.config.json'));
}

/** A REST server around a FakeService with the real security hooks of `extra`'s config. */
export async function securedApp(dir: string, extra: Record<string, unknown>, nowMs?: () => number): Promise<{ app: FastifyInstance; service: FakeService; security: NodeSecurity; metrics: Metrics }> {
  const config = configFor(dir, extra);
  const metrics = new Metrics({ defaultMetrics: false });
  const security = await setupSecurity({ config, resolved: resolveNode(config, 'n1'), logger: silent, registry: metrics.registry, env: {}, ...(nowMs ? { nowMs } : {}) });
  const service = new FakeService();
  const app = buildServer({ service, nodeId: 'n1', metrics, limits: LIMITS, logger: false, ...(security.authorize ? { authorize: security.authorize } : {}) });
  security.installApiGuards(app);
  return { app, service, security, metrics };
}

// ---- real transports wired by setupSecurity ----

export interface Peer {
  id: string;
  t: HttpTransport;
  inbox: Message[];
  metrics: Metrics;
  security: NodeSecurity;
}

/** raftlock_peer_auth_rejected_total{reason} on a peer's registry */
export async function rejected(m: Metrics, reason: string): Promise<number> {
  const c = m.registry.getSingleMetric('raftlock_peer_auth_rejected_total');
  const v = (await c?.get())?.values.find((x) => x.labels.reason === reason);
  return v?.value ?? 0;
}

/** transports for ids, each wired by setupSecurity from a cluster file built from `extra`,
 *  started and told about each other */
export async function startPeers(
  dir: string,
  ids: string[],
  scheme: 'http' | 'https',
  extra: (id: string) => Record<string, unknown>,
  env: (id: string) => NodeJS.ProcessEnv = () => ({}),
  transport: Partial<HttpTransportOptions> = {},
): Promise<Peer[]> {
  const peers: Peer[] = [];
  for (const id of ids) {
    const json = {
      cluster: 'test',
      nodes: ids.map((x, i) => ({ id: x, api: `http://127.0.0.1:${7600 + i}`, peer: `${scheme}://127.0.0.1:${7700 + i}` })),
      data_dir: join(dir, 'data'),
      ...extra(id),
    };
    const config = parseConfig(json, join(dir, `${id}.config.json`));
    const metrics = new Metrics({ defaultMetrics: false });
    const security = await setupSecurity({ config, resolved: resolveNode(config, id), logger: silent, registry: metrics.registry, env: env(id) });
    const t = new HttpTransport({ self: id, cluster: 'test', listen: { host: '127.0.0.1', port: 0 }, peers: new Map(), logger: captureLogger(), registry: metrics.registry, ...transport, ...security.transport });
    const p: Peer = { id, t, inbox: [], metrics, security };
    peers.push(p);
    await t.start();
    t.onMessage((m) => p.inbox.push(m));
  }
  const map = new Map(peers.map((p) => [p.id, `${scheme}://127.0.0.1:${p.t.address().port}`]));
  for (const p of peers) p.t.setPeers(map);
  return peers;
}
