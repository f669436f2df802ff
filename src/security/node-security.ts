// One node's security setup (docs/security.md), built from the cluster file before anything
// listens, so startNode only passes hooks along:
//   - TLS for the API and the peer transport, reloadable on SIGHUP       (tls.ts)
//   - peer authentication: CA-signed client certificate and/or HMAC       (peer-auth.ts)
//   - API tokens with per-prefix rights                                   (tokens.ts)
//   - request rate per client address                                     (rate-limit.ts)
//   - the start-up rules: auth on beyond loopback, loud warnings.
// A start-up problem is a ConfigError (one line, exit 2); a reload problem is logged and
// the old material stays in force: a bad file on SIGHUP must never take a node down.
import { lookup } from 'node:dns/promises';
import { readFileSync, statSync } from 'node:fs';
import type http from 'node:http';
import { isIP } from 'node:net';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { Counter, type Registry } from 'prom-client';
import type { buildConnector } from 'undici';
import { ApiError } from '../api/errors.js';
import { FORWARDED_HEADER } from '../api/forward.js';
import { PUBLIC_UI_PATHS } from '../api/routes/ui.js';
import type { Authorizer } from '../api/routes/context.js';
import { ConfigError, pathForNode, type Config, type ResolvedNode } from '../config.js';
import type { HttpTransport, HttpTransportOptions } from '../transport/http-transport.js';
import { PeerAuthenticator, MIN_SECRET_BYTES, STREAM_TAG_BYTES } from './peer-auth.js';
import { ClientRateLimiter } from './rate-limit.js';
import { TokenStore, TokensFileError } from './tokens.js';
import { apiServerOptions, loadTlsMaterial, peerCertificateProblem, peerServerOptions, ReloadableConnector, TlsFileError, type TlsMaterial } from './tls.js';
import type https from 'node:https';

export const CLUSTER_SECRET_ENV = 'RAFTLOCK_CLUSTER_SECRET';
/** routes a load balancer polls: never rate-limited, never behind auth (docs/contract.md §2 "cluster.config.json") */
const OPEN_ROUTES = new Set(['/healthz', '/readyz']);

function pathOf(req: FastifyRequest): string {
  return (req.raw.url ?? '').split('?', 1)[0] ?? '';
}

export interface SecurityOptions {
  config: Config;
  resolved: ResolvedNode;
  logger: Logger;
  registry: Registry;
  env?: NodeJS.ProcessEnv;
  nowMs?: () => number;
}

export interface NodeSecurity {
  /** buildServer deps */
  https?: https.ServerOptions;
  /** connectors to other members' https APIs with this node's API certificate (a follower
   *  relaying to the leader, the status page's probes); SIGHUP reloads them with the server */
  apiClientConnect?: (timeoutMs: number) => buildConnector.connector;
  authorize?: Authorizer;
  /** lock-service dep: may this principal act on other principals' sessions? */
  mayActForOthers?: (principal: string, name: string | undefined) => boolean;
  /** HttpTransport options */
  transport: Pick<HttpTransportOptions, 'authenticate' | 'authenticateBody' | 'signRequest' | 'streamAuth' | 'tls'>;
  /** adds the rate limiter to the API server (call before listen) */
  installApiGuards(app: FastifyInstance): void;
  /** SIGHUP: re-read certificates, tokens and the cluster secret; keeps what fails */
  reload(targets: { api: FastifyInstance; transport: HttpTransport }): { ok: string[]; failed: string[] };
}

export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127\.\d+\.\d+\.\d+$/.test(h) || /^::ffff:127\.\d+\.\d+\.\d+$/.test(h);
}

function apiListenHost(n: Config['nodes'][number]): string {
  return n.listenApi?.host ?? new URL(n.api).hostname;
}

/**
 * The auth rule (docs/security.md): auth is OFF by default only when every node's API
 * listens on loopback (a dev cluster on one machine). If any node's API listens anywhere
 * else, the file must either configure tokens (`auth.tokens_file`) or say explicitly
 * `"auth": { "disabled": true }`; otherwise the node refuses to start. Decided over the
 * whole file, not per node, so every node of a cluster applies the same rule.
 */
export function authProblem(config: Config): string | null {
  if (config.auth || config.authDisabled) return null;
  const exposed = config.nodes.find((n) => !isLoopbackHost(apiListenHost(n)));
  if (!exposed) return null;
  return `auth: required because node ${exposed.id}'s API listens on ${apiListenHost(exposed)} (not loopback); add "auth": { "tokens_file": "tokens.json" } (docs/security.md), or "auth": { "disabled": true } to accept an open API`;
}

/** The cluster secret: cluster_secret_file if configured, else $RAFTLOCK_CLUSTER_SECRET.
 *  Surrounding whitespace is trimmed (files written with echo end in a newline). */
export function readClusterSecret(config: Config, nodeId: string, env: NodeJS.ProcessEnv, warn: (msg: string) => void): Buffer | null {
  if (config.clusterSecretFile !== undefined) {
    const file = pathForNode(config.clusterSecretFile, nodeId);
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
      if ((statSync(file).mode & 0o077) !== 0) warn(`cluster_secret_file ${file} is readable by group or others; chmod 600 it`);
    } catch (err) {
      throw new ConfigError(`cluster_secret_file ${file}: cannot read (${(err as NodeJS.ErrnoException).code ?? String(err)})`, { cause: err });
    }
    return checkSecret(Buffer.from(text.trim(), 'utf8'), `cluster_secret_file ${file}`);
  }
  const v = env[CLUSTER_SECRET_ENV];
  if (v === undefined || v.trim() === '') return null;
  return checkSecret(Buffer.from(v.trim(), 'utf8'), CLUSTER_SECRET_ENV);
}

function checkSecret(b: Buffer, what: string): Buffer {
  if (b.length < MIN_SECRET_BYTES) throw new ConfigError(`${what}: the cluster secret must be at least ${MIN_SECRET_BYTES} bytes (32 random bytes recommended: openssl rand -hex 32), got ${b.length}`);
  return b;
}

function asConfigError<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof TlsFileError || err instanceof TokensFileError) throw new ConfigError(err.message, { cause: err });
    throw err;
  }
}

/** hosts of every configured API address, resolved to IPs: forwarded requests from them
 *  are not rate-limited again (the entry node already counted them) */
async function memberAddresses(config: Config): Promise<Set<string>> {
  const out = new Set<string>();
  for (const n of config.nodes) {
    for (const host of [new URL(n.api).hostname.replace(/^\[|\]$/g, ''), n.listenApi?.host]) {
      if (host === undefined) continue;
      if (isIP(host)) out.add(host);
      else {
        try {
          for (const a of await lookup(host, { all: true })) out.add(a.address);
        } catch {
          /* unresolvable now: its forwarded requests are simply counted like a client's */
        }
      }
    }
  }
  for (const a of [...out]) if (isIP(a) === 4) out.add(`::ffff:${a}`);
  return out;
}

export async function setupSecurity(o: SecurityOptions): Promise<NodeSecurity> {
  const { config, resolved, logger } = o;
  const id = resolved.node.id;
  const env = o.env ?? process.env;
  const nowMs = o.nowMs ?? Date.now;
  const log = logger.child({ component: 'security' });

  const problem = authProblem(config);
  if (problem) throw new ConfigError(`${config.file}: ${problem}`);

  const peerRejected = new Counter({ name: 'raftlock_peer_auth_rejected_total', help: 'inbound peer requests refused by peer authentication (certificate or cluster secret)', labelNames: ['reason'], registers: [o.registry] });
  const rateLimited = new Counter({ name: 'raftlock_api_rate_limited_total', help: 'API requests refused with 429 by the per-client request rate limit', registers: [o.registry] });
  const reloads = new Counter({ name: 'raftlock_security_reloads_total', help: 'SIGHUP reloads of certificates, tokens and the cluster secret', labelNames: ['result'], registers: [o.registry] });

  // ---- material, checked before anything listens ----
  let apiTls = config.tls ? asConfigError(() => loadTlsMaterial(config.tls!, id, 'tls')) : null;
  let peerTls = config.peerTls ? asConfigError(() => loadTlsMaterial(config.peerTls!, id, 'peer_tls')) : null;
  let tokens = config.auth ? asConfigError(() => TokenStore.load(config.auth!.tokensFile)) : null;
  const secret = readClusterSecret(config, id, env, (m) => log.warn(m));
  const hmac = secret ? new PeerAuthenticator({ secret, nowMs }) : null;
  const peerConnector = peerTls ? new ReloadableConnector(peerTls) : null;
  /** every connector handed out by apiClientConnect, for reloads */
  const apiConnectors: ReloadableConnector[] = [];
  for (const [what, m] of [['tls', apiTls], ['peer_tls', peerTls]] as const) if (m) warnExpiry(log, what, m, nowMs());

  // ---- loud warnings (warned loudly at start: docs/security.md) ----
  if (!isLoopbackHost(resolved.peerListen.host) && !peerTls && !hmac) {
    log.warn({ listen: resolved.peerListen.host, security: 'INSECURE' }, `INSECURE: the peer transport listens on ${resolved.peerListen.host} with neither peer_tls nor a cluster secret: anyone who can reach it can join the Raft protocol. Set cluster_secret_file (or ${CLUSTER_SECRET_ENV}) at least; see docs/security.md`);
  }
  if (config.authDisabled && config.nodes.some((n) => !isLoopbackHost(apiListenHost(n)))) {
    log.warn({ security: 'INSECURE' }, 'INSECURE: "auth": { "disabled": true } with an API beyond loopback: anyone who can reach it can take and release any lock');
  }
  log.info({ apiTls: !!apiTls, clientCertAuth: config.tls?.clientCertAuth ?? false, peerTls: !!peerTls, clusterSecret: !!hmac, auth: tokens ? `${tokens.size} tokens` : 'off', requestsPerSecondPerClient: config.limits.requestsPerSecondPerClient }, 'security settings');

  // ---- peer authentication hooks ----
  const refusePeer = (reason: string): false => {
    peerRejected.inc({ reason });
    return false;
  };
  const authenticate = (req: http.IncomingMessage): boolean => {
    if (peerTls) {
      const p = peerCertificateProblem(req.socket);
      if (p) return refusePeer(p);
    }
    if (hmac) {
      const r = hmac.precheck(req.headers);
      if (!r.ok) return refusePeer(`secret_${r.reason}`);
    }
    return true;
  };
  const authenticateBody = (req: http.IncomingMessage, body: Uint8Array): boolean => {
    const r = hmac!.verify(req.method ?? '', req.url ?? '', req.headers, body);
    return r.ok ? true : refusePeer(`secret_${r.reason}`);
  };
  const transport: NodeSecurity['transport'] = {};
  if (peerTls || hmac) transport.authenticate = authenticate;
  if (hmac) {
    transport.authenticateBody = authenticateBody;
    transport.signRequest = (method, path, body) => hmac.sign(method, path, body);
    // streams: the opening request passed authenticateBody (empty body); every frame is
    // then tagged under a key derived from its nonce (peer-auth.ts)
    transport.streamAuth = {
      tagBytes: STREAM_TAG_BYTES,
      sender: (openHeaders) => hmac.streamSender(openHeaders),
      receiver: (headers) => {
        const verify = hmac.streamReceiver(headers);
        if (!verify) return refusePeer('secret_malformed') || null;
        return (frame, tag) => verify(frame, tag) || refusePeer('secret_bad_frame_tag');
      },
    };
  }
  if (peerTls && peerConnector) transport.tls = { server: peerServerOptions(peerTls), client: peerConnector.connect };

  // ---- API ----
  const out: NodeSecurity = {
    transport,
    installApiGuards: () => undefined,
    reload: () => ({ ok: [], failed: [] }),
  };
  if (apiTls) {
    out.https = apiServerOptions(apiTls, config.tls!.clientCertAuth);
    // a follower relaying to the leader presents the node's own API certificate, which
    // `raftlock certs` issues for both server and client use (client_cert_auth)
    out.apiClientConnect = (timeoutMs) => {
      const c = new ReloadableConnector(apiTls!, timeoutMs);
      apiConnectors.push(c);
      return c.connect;
    };
  }
  if (tokens) {
    out.authorize = (a) => tokens!.authorizer()(a);
    out.mayActForOthers = (principal, name) => tokens!.allows(principal, 'admin', name);
  }

  const rate = config.limits.requestsPerSecondPerClient;
  const members = rate > 0 ? await memberAddresses(config) : new Set<string>();
  out.installApiGuards = (app) => {
    if (rate > 0) installRateLimit(app);
    // Authentication first, for every route (also unknown ones): an anonymous caller learns
    // nothing, not even which bodies validate. Rights per name are checked by the routes.
    if (tokens) {
      app.addHook('onRequest', async (req: FastifyRequest) => {
        // the status page's shell and the API docs hold no cluster data (docs/operations.md
        // "Status page"): a browser cannot send a bearer token when it navigates; their
        // data routes need one
        const path = pathOf(req);
        if (!OPEN_ROUTES.has(path) && !(req.method === 'GET' && PUBLIC_UI_PATHS.has(path))) tokens!.authenticate(req.headers.authorization);
      });
    }
  };
  const installRateLimit = (app: FastifyInstance): void => {
    const limiter = new ClientRateLimiter(rate, nowMs);
    app.addHook('onRequest', async (req: FastifyRequest) => {
      if (OPEN_ROUTES.has(pathOf(req))) return;
      const remote = req.socket.remoteAddress ?? 'unknown';
      // already counted by the node the client called (the header alone proves nothing:
      // it must come from a member's address)
      if (req.headers[FORWARDED_HEADER] !== undefined && members.has(remote)) return;
      const d = limiter.take(remote);
      if (!d.ok) {
        rateLimited.inc();
        throw new ApiError('too_many_requests', `more than ${rate} requests per second from ${remote} (limits.requests_per_second_per_client)`, { retryAfterS: d.retryAfterS });
      }
    });
  };

  out.reload = ({ api, transport: t }) => {
    const ok: string[] = [];
    const failed: string[] = [];
    const attempt = (what: string, fn: () => void): void => {
      try {
        fn();
        ok.push(what);
      } catch (err) {
        failed.push(what);
        log.error({ what, err: (err as Error).message }, 'reload failed; the previous material stays in force');
      }
    };
    if (config.tls) {
      attempt('tls', () => {
        const m = loadTlsMaterial(config.tls!, id, 'tls');
        (api.server as unknown as https.Server).setSecureContext(apiServerOptions(m, config.tls!.clientCertAuth));
        for (const c of apiConnectors) c.set(m);
        apiTls = m;
        warnExpiry(log, 'tls', m, nowMs());
      });
    }
    if (config.peerTls) {
      attempt('peer_tls', () => {
        const m = loadTlsMaterial(config.peerTls!, id, 'peer_tls');
        t.setServerTls(peerServerOptions(m));
        peerConnector!.set(m);
        peerTls = m;
        warnExpiry(log, 'peer_tls', m, nowMs());
      });
    }
    if (config.auth) attempt('tokens', () => (tokens = TokenStore.load(config.auth!.tokensFile)));
    if (hmac) {
      attempt('cluster_secret', () => {
        const s = readClusterSecret(config, id, env, (m) => log.warn(m));
        if (s) hmac.setSecret(s);
      });
    }
    reloads.inc({ result: failed.length === 0 ? 'ok' : 'failed' });
    log.info({ reloaded: ok, failed }, 'security reload (SIGHUP)');
    return { ok, failed };
  };
  return out;
}

function warnExpiry(log: Logger, what: string, m: TlsMaterial, now: number): void {
  const days = (m.notAfterMs - now) / 86_400_000;
  if (days < 0) log.error({ what, subject: m.subject, notAfter: new Date(m.notAfterMs).toISOString() }, 'certificate has EXPIRED: peers and clients will refuse it');
  else if (days < 14) log.warn({ what, subject: m.subject, notAfter: new Date(m.notAfterMs).toISOString() }, `certificate expires in ${days.toFixed(1)} days; replace the files and send SIGHUP`);
}
