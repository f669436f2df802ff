// cluster.config.json (docs/contract.md §2 "cluster.config.json"): a zod 4 schema, strict
// everywhere (an unknown field is an error, so a typo never silently falls back to a
// default), plus the cross-field rules zod cannot express per field. loadConfig() returns a
// camelCase, fully-defaulted Config with paths resolved against the config file's folder,
// or throws a ConfigError whose message is ONE line naming the field: the CLI prints it and
// exits, never a stack trace.
import { readFileSync } from 'node:fs';
import { basename, dirname, isAbsolute, resolve } from 'node:path';
import { readDuration, MAX_DURATION_TEXT } from '@raftlock/client/duration';
import { z } from 'zod';
import { describeValue, zodErrorText } from './zod-error.js';

export class ConfigError extends Error {
  constructor(message: string, opts?: { cause?: unknown }) {
    super(message, opts);
    this.name = 'ConfigError';
  }
}

export interface HostPort {
  host: string;
  port: number;
}
export interface NodeConfig {
  id: string;
  /** advertised URLs: what other processes use to reach this node */
  api: string;
  peer: string;
  /** bind addresses when they differ from the advertised ones (etcd's listen vs advertise) */
  listenApi?: HostPort;
  listenPeer?: HostPort;
}
export interface TlsConfig {
  /** absolute paths; may still contain `{node}` (see pathForNode) */
  certFile: string;
  keyFile: string;
  caFile?: string;
  clientCertAuth: boolean;
}
export interface PeerTlsConfig {
  certFile: string;
  keyFile: string;
  caFile: string;
}
export interface SessionConfig {
  defaultTtlMs: number;
  minTtlMs: number;
  maxTtlMs: number;
  lockDelayMs: number;
}
export interface LimitsConfig {
  maxSessions: number;
  maxSessionsPerToken: number;
  maxWaitersPerLock: number;
  /** 0 = no rate limit */
  requestsPerSecondPerClient: number;
  /** optional field (docs/security.md "Limits"): lock entries (held or in lock-delay) plus queued waits,
   *  cluster-wide; with maxSessions, the FSM's memory bound */
  maxLocks: number;
  /** open watch streams one node serves (429 beyond) */
  maxWatchStreams: number;
}
/** membership changes (docs/membership.md) */
export interface MembershipConfig {
  /** a learner is promoted to voter once its log is within this many entries of the leader's */
  promoteMaxLagEntries: number;
  /** how long one add/promote request waits for the learner to catch up (then 504; it stays a learner) */
  catchUpTimeoutMs: number;
}
export interface Config {
  /** absolute path of the file this came from */
  file: string;
  cluster: string;
  nodes: NodeConfig[];
  /** absolute; each node's data lives in dataDir/<id> (resolveNode) */
  dataDir: string;
  electionTimeoutMs: { min: number; max: number };
  heartbeatMs: number;
  session: SessionConfig;
  snapshotEveryEntries: number;
  /** watch events each node keeps in memory for resumption (docs/contract.md §4 "Watch") */
  eventsRetained: number;
  tls?: TlsConfig;
  peerTls?: PeerTlsConfig;
  clusterSecretFile?: string;
  auth?: { tokensFile: string };
  /** `"auth": { "disabled": true }` (optional): run without API auth even though
   *  an API listens beyond loopback (docs/security.md "When auth is on") */
  authDisabled?: true;
  limits: LimitsConfig;
  membership: MembershipConfig;
}

// ---------------------------------------------------------------------------------------
// Field types

/** Node ids end up in paths (data_dir/<id>) and URLs: no dots, so never "." or "..". */
const NODE_ID_RE = /^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$/;
/** Milliseconds: a non-negative integer, or a string of the one duration grammar
 *  (@raftlock/client/duration): "500", "500ms", "10s", "1.5m", "1h". */
export function parseDurationMs(v: unknown): number | string {
  if (typeof v !== 'number' && typeof v !== 'string') return `expected milliseconds (a number, or a string like "500ms"/"10s"), got ${describeValue(v)}`;
  const r = readDuration(v);
  if ('ms' in r) return r.ms;
  if (r.problem === 'too_long') return `must be at most ${MAX_DURATION_TEXT}, got ${describeValue(v)}`;
  if (typeof v === 'number') return `expected a whole number of milliseconds >= 0, got ${describeValue(v)}`;
  return `expected milliseconds (a number, or a string like "500ms"/"10s"), got ${describeValue(v)}`;
}

const duration = z.unknown().transform((v, ctx): number => {
  const r = parseDurationMs(v);
  if (typeof r === 'string') {
    ctx.addIssue({ code: 'custom', message: r, input: v });
    return z.NEVER;
  }
  return r;
});

/** Why a URL is not usable as an advertised node address, or null when it is. */
export function urlProblem(s: string): string | null {
  const bad = `expected an http(s) URL, got ${describeValue(s)}`;
  let u: URL;
  try {
    u = new URL(s);
  } catch {
    return bad;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return bad;
  if (u.username || u.password) return `must not contain credentials, got ${describeValue(s)}`;
  if ((u.pathname !== '/' && u.pathname !== '') || u.search || u.hash) return `must be scheme://host:port only (no path, query or fragment), got ${describeValue(s)}`;
  return null;
}

const httpUrl = z.string().superRefine((s, ctx) => {
  const p = urlProblem(s);
  if (p) ctx.addIssue({ code: 'custom', message: p, input: s });
});

export function parseHostPort(s: string): HostPort | null {
  const m = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(s);
  if (!m) return null;
  const port = Number(m[2]);
  if (port > 65535) return null;
  return { host: (m[1] as string).replace(/^\[|\]$/g, ''), port };
}

const hostPort = z.string().transform((s, ctx): HostPort => {
  const hp = parseHostPort(s);
  if (!hp) {
    ctx.addIssue({ code: 'custom', message: `expected "host:port" (port 0-65535), got ${describeValue(s)}`, input: s });
    return z.NEVER;
  }
  return hp;
});

const path = z.string().min(1);
const count = (min: number) => z.number().int().min(min).max(Number.MAX_SAFE_INTEGER);

const nodeSchema = z.strictObject({
  id: z.string().regex(NODE_ID_RE, { error: (iss) => `expected 1-63 chars of [A-Za-z0-9_-] starting with a letter or digit, got ${describeValue(iss.input)}` }),
  api: httpUrl,
  peer: httpUrl,
  listen_api: hostPort.optional(),
  listen_peer: hostPort.optional(),
});

const fileSchema = z.strictObject({
  cluster: z.string().min(1).max(128).default('local'),
  nodes: z.array(nodeSchema).min(1).max(15),
  data_dir: path.default('./data'),
  election_timeout_ms: z.tuple([duration, duration]).default([1000, 2000]),
  heartbeat_ms: duration.default(100),
  session: z
    .strictObject({
      default_ttl_ms: duration.default(10_000),
      min_ttl_ms: duration.default(1000),
      max_ttl_ms: duration.default(3_600_000),
      lock_delay_ms: duration.default(0),
    })
    .default({ default_ttl_ms: 10_000, min_ttl_ms: 1000, max_ttl_ms: 3_600_000, lock_delay_ms: 0 }),
  snapshot_every_entries: count(1).default(10_000),
  events_retained: count(1).default(10_000),
  tls: z.strictObject({ cert_file: path, key_file: path, ca_file: path.optional(), client_cert_auth: z.boolean().default(false) }).optional(),
  peer_tls: z.strictObject({ cert_file: path, key_file: path, ca_file: path }).optional(),
  cluster_secret_file: path.optional(),
  // exactly one of tokens_file / disabled (crossFieldProblems)
  auth: z.strictObject({ tokens_file: path.optional(), disabled: z.literal(true).optional() }).optional(),
  limits: z
    .strictObject({
      max_sessions: count(1).default(1_000_000),
      max_sessions_per_token: count(1).default(10_000),
      max_waiters_per_lock: count(1).default(1000),
      requests_per_second_per_client: count(0).default(0),
      max_locks: count(1).default(1_000_000),
      max_watch_streams: count(0).default(10_000),
    })
    .default({ max_sessions: 1_000_000, max_sessions_per_token: 10_000, max_waiters_per_lock: 1000, requests_per_second_per_client: 0, max_locks: 1_000_000, max_watch_streams: 10_000 }),
  membership: z
    .strictObject({
      promote_max_lag_entries: count(0).default(1000),
      catch_up_timeout_ms: duration.default(60_000),
    })
    .default({ promote_max_lag_entries: 1000, catch_up_timeout_ms: 60_000 }),
});
type RawConfig = z.output<typeof fileSchema>;

// ---------------------------------------------------------------------------------------
// Cross-field rules: each returns [fieldPath, problem] or nothing.

type Problem = [string, string];

function crossFieldProblems(c: RawConfig): Problem | undefined {
  const seen = new Map<string, string>();
  for (const [i, n] of c.nodes.entries()) {
    const prev = seen.get(`id:${n.id}`);
    if (prev) return [`nodes[${i}].id`, `duplicate node id "${n.id}" (also ${prev})`];
    seen.set(`id:${n.id}`, `nodes[${i}].id`);
    for (const field of ['api', 'peer'] as const) {
      const origin = new URL(n[field]).origin;
      const other = seen.get(`url:${origin}`);
      if (other) return [`nodes[${i}].${field}`, `address ${origin} is already used by ${other}`];
      seen.set(`url:${origin}`, `nodes[${i}].${field}`);
      const wantHttps = field === 'api' ? c.tls !== undefined : c.peer_tls !== undefined;
      const block = field === 'api' ? 'tls' : 'peer_tls';
      const isHttps = n[field].startsWith('https:');
      if (wantHttps && !isHttps) return [`nodes[${i}].${field}`, `must be https:// because "${block}" is set, got "${n[field]}"`];
      if (!wantHttps && isHttps) return [`nodes[${i}].${field}`, `is https:// but "${block}" is not set, got "${n[field]}"`];
    }
  }
  if (c.auth && c.auth.tokens_file === undefined && c.auth.disabled === undefined) return ['auth.tokens_file', 'required field is missing (or "disabled": true to run without API auth)'];
  if (c.auth && c.auth.tokens_file !== undefined && c.auth.disabled !== undefined) return ['auth.disabled', 'cannot be set together with auth.tokens_file'];
  const [eMin, eMax] = c.election_timeout_ms;
  if (eMin < 1) return ['election_timeout_ms[0]', `must be > 0, got ${eMin}`];
  if (eMin >= eMax) return ['election_timeout_ms', `expected [min, max] with min < max, got [${eMin}, ${eMax}]`];
  if (c.heartbeat_ms < 1) return ['heartbeat_ms', `must be > 0, got ${c.heartbeat_ms}`];
  // §5.6: broadcastTime << electionTimeout, or followers time out between heartbeats.
  if (c.heartbeat_ms >= eMin) return ['heartbeat_ms', `must be below election_timeout_ms min (${eMin}), got ${c.heartbeat_ms}`];
  const s = c.session;
  if (s.min_ttl_ms < 1) return ['session.min_ttl_ms', `must be > 0, got ${s.min_ttl_ms}`];
  if (s.min_ttl_ms > s.max_ttl_ms) return ['session.min_ttl_ms', `must be <= session.max_ttl_ms (${s.max_ttl_ms}), got ${s.min_ttl_ms}`];
  if (s.default_ttl_ms < s.min_ttl_ms || s.default_ttl_ms > s.max_ttl_ms)
    return ['session.default_ttl_ms', `must be within [min_ttl_ms, max_ttl_ms] = [${s.min_ttl_ms}, ${s.max_ttl_ms}], got ${s.default_ttl_ms}`];
  if (s.lock_delay_ms > s.max_ttl_ms) return ['session.lock_delay_ms', `must be <= session.max_ttl_ms (${s.max_ttl_ms}), got ${s.lock_delay_ms}`];
  return undefined;
}

function fail(file: string, field: string, problem: string, cause?: unknown): never {
  throw new ConfigError(`${basename(file)}: ${field ? `${field}: ` : ''}${problem}`.replace(/[\r\n]+/g, ' '), { cause });
}

// ---------------------------------------------------------------------------------------
// Public API

/** Validate an already-parsed JSON value. `file` names the source in messages and anchors
 *  relative paths. */
export function parseConfig(json: unknown, file: string): Config {
  const abs = resolve(file);
  const r = fileSchema.safeParse(json, { reportInput: true });
  if (!r.success) fail(abs, '', r.error.issues.length > 0 ? zodErrorText(r.error, { countMore: true }) : 'invalid configuration');
  const c = r.data;
  const p = crossFieldProblems(c);
  if (p) fail(abs, p[0], p[1]);
  return toConfig(c, abs);
}

/** Read, parse and validate a cluster file. Throws ConfigError (one line) on any problem. */
export function loadConfig(file: string): Config {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? 'error';
    fail(file, '', `cannot read the file (${code === 'ENOENT' ? 'no such file' : code})`, e);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    fail(file, '', `invalid JSON: ${(e as Error).message}`, e);
  }
  return parseConfig(json, file);
}

function toConfig(c: RawConfig, file: string): Config {
  const dir = dirname(file);
  const rel = (p: string): string => (isAbsolute(p) ? p : resolve(dir, p));
  const cfg: Config = {
    file,
    cluster: c.cluster,
    nodes: c.nodes.map((n) => ({
      id: n.id,
      api: n.api.replace(/\/$/, ''),
      peer: n.peer.replace(/\/$/, ''),
      ...(n.listen_api ? { listenApi: n.listen_api } : {}),
      ...(n.listen_peer ? { listenPeer: n.listen_peer } : {}),
    })),
    dataDir: rel(c.data_dir),
    electionTimeoutMs: { min: c.election_timeout_ms[0], max: c.election_timeout_ms[1] },
    heartbeatMs: c.heartbeat_ms,
    session: {
      defaultTtlMs: c.session.default_ttl_ms,
      minTtlMs: c.session.min_ttl_ms,
      maxTtlMs: c.session.max_ttl_ms,
      lockDelayMs: c.session.lock_delay_ms,
    },
    snapshotEveryEntries: c.snapshot_every_entries,
    eventsRetained: c.events_retained,
    limits: {
      maxSessions: c.limits.max_sessions,
      maxSessionsPerToken: c.limits.max_sessions_per_token,
      maxWaitersPerLock: c.limits.max_waiters_per_lock,
      requestsPerSecondPerClient: c.limits.requests_per_second_per_client,
      maxLocks: c.limits.max_locks,
      maxWatchStreams: c.limits.max_watch_streams,
    },
    membership: {
      promoteMaxLagEntries: c.membership.promote_max_lag_entries,
      catchUpTimeoutMs: Math.max(1, c.membership.catch_up_timeout_ms),
    },
  };
  if (c.tls) cfg.tls = { certFile: rel(c.tls.cert_file), keyFile: rel(c.tls.key_file), clientCertAuth: c.tls.client_cert_auth, ...(c.tls.ca_file ? { caFile: rel(c.tls.ca_file) } : {}) };
  if (c.peer_tls) cfg.peerTls = { certFile: rel(c.peer_tls.cert_file), keyFile: rel(c.peer_tls.key_file), caFile: rel(c.peer_tls.ca_file) };
  if (c.cluster_secret_file) cfg.clusterSecretFile = rel(c.cluster_secret_file);
  if (c.auth?.tokens_file !== undefined) cfg.auth = { tokensFile: rel(c.auth.tokens_file) };
  if (c.auth?.disabled) cfg.authDisabled = true;
  return cfg;
}

/** `{node}` in a path → the node's id (docs/contract.md §2 "cluster.config.json": one file serves every node). */
export function pathForNode(template: string, id: string): string {
  return template.replaceAll('{node}', id);
}

export interface ResolvedNode {
  node: NodeConfig;
  /** where to bind: listen_api/listen_peer when given, else the advertised URL's host:port */
  apiListen: HostPort;
  peerListen: HostPort;
  /** absolute; --data-dir when given, else <data_dir>/<id> */
  dataDir: string;
}

function urlHostPort(u: string): HostPort {
  const url = new URL(u);
  const port = url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
  return { host: url.hostname.replace(/^\[|\]$/g, ''), port };
}

/** This node's entry and bind addresses. Throws ConfigError for an unknown id. */
export function resolveNode(config: Config, id: string, opts: { dataDir?: string } = {}): ResolvedNode {
  const node = config.nodes.find((n) => n.id === id);
  if (!node) fail(config.file, '--node', `unknown node "${id}" (the file has: ${config.nodes.map((n) => n.id).join(', ')})`);
  return {
    node,
    apiListen: node.listenApi ?? urlHostPort(node.api),
    peerListen: node.listenPeer ?? urlHostPort(node.peer),
    dataDir: opts.dataDir !== undefined ? resolve(opts.dataDir) : resolve(config.dataDir, node.id),
  };
}
