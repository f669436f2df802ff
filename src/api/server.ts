// The REST server (docs/contract.md §3 "REST API"): buildServer(deps) returns a fastify
// instance, not listening, so tests drive it with inject() and main decides where it
// listens. Everything that touches the wire contract lives here or in routes/: body parsing
// and its limits, the error shape, 404s, request ids, the HTTP metric, abort on disconnect
// and on shutdown.
import type { ServerResponse } from 'node:http';
import type { ServerOptions as HttpsServerOptions } from 'node:https';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest, type FastifyServerOptions } from 'fastify';
import type { LoggerOptions } from 'pino';
import type { buildConnector } from 'undici';
import type { Metrics } from '../metrics.js';
import { ApiError } from './errors.js';
import { toApiError } from './failure-edge.js';
import { Forwarder } from './forward.js';
import { clusterRoutes } from './routes/cluster.js';
import type { Authorizer, RouteEnv } from './routes/context.js';
import { lockRoutes } from './routes/locks.js';
import { semaphoreRoutes } from './routes/semaphores.js';
import { electionRoutes } from './routes/elections.js';
import { opsRoutes } from './routes/ops.js';
import { sessionRoutes } from './routes/sessions.js';
import { snapshotRoutes } from './routes/snapshot.js';
import { statusRoutes } from './routes/status.js';
import { uiRoutes } from './routes/ui.js';
import { watchRoutes } from './routes/watch.js';
import type { WatchFeed } from './watch-feed.js';
import { MemberProbe, PROBE_TIMEOUT_MS } from './member-probe.js';
import type { OpsService } from './ops-service.js';
import type { LockService } from './service.js';
import { BODY_LIMIT_BYTES, bodySchemas, type ApiLimits } from './validate.js';

/** Every answer names the leader this node knows, by its advertised API URL (docs/api.md
 *  "Leader hint"): clients send their next writes there instead of paying a follower's
 *  relay. Absent while the node knows no leader. */
export const LEADER_HEADER = 'x-raftlock-leader';
/** A waiting acquire may hold its response up to wait_ms (≤ 300 s); idle sockets get that plus margin. */
const SOCKET_IDLE_TIMEOUT_MS = 330_000;
const REQUEST_ID_RE = /^[A-Za-z0-9._:-]{1,64}$/;

export interface ServerDeps {
  service: LockService;
  nodeId: string;
  metrics: Metrics;
  /** a pino logger, pino options, or false for silence (default: false) */
  logger?: FastifyBaseLogger | LoggerOptions | boolean;
  limits: ApiLimits;
  /** how long a follower waits for the leader's answer, on top of the request's wait_ms */
  forwardTimeoutMs?: number;
  /** connectors to other members' https APIs (forwarding, the status page's probes),
   *  presenting this node's API certificate; built per connect timeout */
  apiClientConnect?: (timeoutMs: number) => buildConnector.connector;
  /** TLS for this API (docs/contract.md §2 "cluster.config.json" `tls`); main reads the files */
  https?: HttpsServerOptions;
  authorize?: Authorizer;
  /** log every request and response (fastify's request logging); off by default: on a busy
   *  lock service it costs more than the request itself. Errors are always logged. */
  requestLogging?: boolean;
  /** status page data and backups (docs/operations.md "Status page", "Backup and restore"); without it /v1/status and /v1/snapshot answer 404 */
  ops?: OpsService;
  /** the node's watch feed (GET /v1/watch); without it the route answers 404 */
  watch?: WatchFeed;
  /** test hook: a watch stream's unsent-bytes bound (default WATCH_STREAM_BUFFER_BYTES) */
  watchStreamBufferBytes?: number;
  /** called as each client answer (/v1/…) is handed to the socket: the node passes the
   *  per-step trace's last server step (src/raft/trace.ts) while tracing; no hook without it */
  onAnswer?: () => void;
}

/**
 * Server options for the API's HTTP server. Slowloris defences: the headers must arrive in
 * 10 s and the whole request in 30 s (node's requestTimeout stops counting once the request
 * is received, so a long-polling acquire is not cut); an idle socket lives 330 s, longer
 * than the longest legitimate wait (300 s). Keep-alive 72 s outlives the forwarders'
 * 10 s pool idle time, so a follower never reuses a socket the leader is closing.
 */
export function serverOptions(): FastifyServerOptions & { http: { headersTimeout: number; connectionsCheckingInterval: number } } {
  return {
    bodyLimit: BODY_LIMIT_BYTES,
    connectionTimeout: SOCKET_IDLE_TIMEOUT_MS,
    keepAliveTimeout: 72_000,
    requestTimeout: 30_000,
    // node checks both timeouts only every connectionsCheckingInterval (default 30 s), so
    // without this a slowloris socket lived 30 s, not 10 (test/security/limits.test.ts)
    http: { headersTimeout: 10_000, connectionsCheckingInterval: 1000 },
    // Idle sockets close at once; in-flight requests finish: preClose aborts their waits,
    // so a waiting acquire answers 503 instead of seeing its connection cut.
    forceCloseConnections: 'idle',
    // We answer requests that arrive while closing ourselves, in the contract's error shape.
    return503OnClosing: false,
    routerOptions: { maxParamLength: 1024 },
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    requestIdHeader: false,
  };
}

function isLoggerInstance(l: unknown): l is FastifyBaseLogger {
  return typeof l === 'object' && l !== null && typeof (l as FastifyBaseLogger).child === 'function' && typeof (l as FastifyBaseLogger).info === 'function';
}

export function buildServer(deps: ServerDeps): FastifyInstance {
  let seq = 0;
  const base = serverOptions();
  const opts: FastifyServerOptions = Object.assign({}, base, {
    logController: new LogController({ disableRequestLogging: !deps.requestLogging }),
    genReqId: (req) => {
      const h = req.headers['x-request-id'];
      return typeof h === 'string' && REQUEST_ID_RE.test(h) ? h : `${deps.nodeId}-${(++seq).toString(36)}`;
    },
    // Router-level failures (bad percent-encoding in the path) in the contract's shape.
    frameworkErrors: (err, _req, reply) => {
      const msg = err.code === 'FST_ERR_BAD_URL' ? 'path: bad percent-encoding' : err.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 'path: a path parameter is too long' : 'path: invalid';
      sendError(reply, new ApiError('invalid_request', msg));
    },
  } satisfies FastifyServerOptions);
  if (deps.https) (opts as { https?: HttpsServerOptions }).https = Object.assign({}, deps.https, { headersTimeout: base.http.headersTimeout, connectionsCheckingInterval: base.http.connectionsCheckingInterval }) as HttpsServerOptions;
  if (isLoggerInstance(deps.logger)) opts.loggerInstance = deps.logger;
  else opts.logger = deps.logger ?? false;
  const app = Fastify(opts) as unknown as FastifyInstance;

  const forwarder = new Forwarder({ nodeId: deps.nodeId, timeoutMs: deps.forwardTimeoutMs ?? 5000, ...(deps.apiClientConnect ? { connect: deps.apiClientConnect(5000) } : {}) });
  const env: RouteEnv = { service: deps.service, forwarder, schemas: bodySchemas(deps.limits), ...(deps.authorize ? { authorize: deps.authorize } : {}) };

  installBodyParser(app);
  installLifecycle(app, deps, forwarder);
  // an error may come after a leader change (a 503 from a deposed leader, a failed relay):
  // its hint is taken again, so the client's next attempt goes to the leader known now
  app.setErrorHandler((err, req, reply) => {
    setLeaderHeader(reply, deps.service);
    sendError(reply, toApiError(err, req));
  });
  app.setNotFoundHandler((req, reply) => {
    sendError(reply, new ApiError('not_found', `no route ${req.method} ${(req.raw.url ?? '').split('?', 1)[0]?.slice(0, 200)}`));
  });

  // Each route group is a plugin in its own encapsulated context: it inherits what is set
  // above (parsers, hooks, error and not-found handlers) and whatever the caller adds on
  // the root before listen() (node-security's auth and rate-limit hooks): plugins load
  // at ready(), after both.
  app.register(sessionRoutes, { env });
  app.register(lockRoutes, { env });
  app.register(semaphoreRoutes, { env });
  app.register(electionRoutes, { env });
  app.register(clusterRoutes, { env });
  app.register(opsRoutes, { env, metrics: deps.metrics });
  // the status page, API docs, backups and the watch stream
  const probe = new MemberProbe(deps.nodeId, deps.apiClientConnect?.(PROBE_TIMEOUT_MS));
  app.addHook('onClose', async () => probe.close());
  app.register(uiRoutes, { limits: deps.limits });
  app.register(statusRoutes, { env, ops: deps.ops, probe });
  app.register(snapshotRoutes, { env, ops: deps.ops });
  app.register(watchRoutes, { env, feed: deps.watch, bufferBytes: deps.watchStreamBufferBytes });
  return app;
}

/** Only application/json bodies (spec: anything else is 415), parsed without prototype
 *  pollution: JSON.parse makes "__proto__" an own key, which we refuse outright so no later
 *  Object.assign can turn it into a prototype. An empty body counts as no body. */
function installBodyParser(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit: BODY_LIMIT_BYTES }, (_req, body, done) => {
    const text = String(body);
    if (text.trim() === '') return done(null, undefined);
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (e) {
      return done(new ApiError('invalid_request', `body: invalid JSON (${(e as Error).message.slice(0, 120)})`), undefined);
    }
    // The walk only matters when a forbidden key can be spelled: written out, or with a
    // \u escape (JSON.parse turns "\u005f_proto__" into "__proto__"). Most bodies are
    // neither, and skip it.
    const bad = MAY_HOLD_FORBIDDEN_KEY.test(text) ? forbiddenKey(value, 0) : null;
    if (bad) return done(new ApiError('invalid_request', `body: forbidden key "${bad}"`), undefined);
    done(null, value);
  });
}

const MAY_HOLD_FORBIDDEN_KEY = /__proto__|constructor|prototype|\\u/;

function forbiddenKey(v: unknown, depth: number): string | null {
  if (typeof v !== 'object' || v === null) return null;
  if (depth > 64) return '(nesting deeper than 64)';
  for (const k of Object.keys(v)) {
    if (k === '__proto__' || k === 'constructor' || k === 'prototype') return k;
    const inner = forbiddenKey((v as Record<string, unknown>)[k], depth + 1);
    if (inner) return inner;
  }
  return null;
}

function installLifecycle(app: FastifyInstance, deps: ServerDeps, forwarder: Forwarder): void {
  const inflight = new Set<AbortController>();
  let closing = false;
  app.decorateRequest('routeLabel', '');
  app.decorateRequest('rawResponse', null);
  app.decorateRequest('abortArmed', null);
  // The abort signal is made on first use: most requests never wait, and a controller, a
  // 'close' listener and a set entry per request were ~5% of the leader's CPU per
  // request (`npm run bench:http`). Only a request that waits (a queued acquire, a relay
  // to the leader, the status page's probes) asks for it.
  app.decorateRequest('abortController', {
    getter(this: FastifyRequest): AbortController {
      return this.abortArmed ?? (this.abortArmed = arm(this.rawResponse));
    },
  });
  /** the controller of a request that waits: aborted when its client goes away or the server closes */
  const arm = (res: ServerResponse | null): AbortController => {
    const ac = new AbortController();
    if (closing) ac.abort(new Error('server shutting down'));
    else if (res === null || res.closed) {
      // the connection is already gone (ServerResponse 'close' fires on completion too;
      // writableFinished tells the two apart)
      if (!res?.writableFinished) ac.abort(new Error('client closed the connection'));
    } else {
      inflight.add(ac);
      res.once('close', () => {
        inflight.delete(ac);
        if (!res.writableFinished) ac.abort(new Error('client closed the connection'));
      });
    }
    return ac;
  };

  // route template → metrics label, computed once per route rather than once per request
  const labels = new Map<string, string>();
  const routeLabel = (url: string | undefined): string => {
    if (!url) return 'unmatched';
    let label = labels.get(url);
    if (label === undefined) labels.set(url, (label = url.replace(/:([A-Za-z_]+)/g, '{$1}')));
    return label;
  };
  // one pre-bound histogram child per (route, method, status): prom-client's labelled
  // observe hashes the label object on every call
  const durations = new Map<string, { observe(v: number): void }>();
  const durationOf = (route: string, method: string, status: number): { observe(v: number): void } => {
    const k = `${status} ${method} ${route}`;
    let child = durations.get(k);
    if (child === undefined) durations.set(k, (child = deps.metrics.httpRequestDuration.labels({ route, method, status_code: String(status) })));
    return child;
  };

  // Hooks in callback style: an async hook costs a promise and a microtask per request.
  app.addHook('onRequest', (req, reply, done) => {
    req.routeLabel = routeLabel(req.routeOptions.url);
    req.rawResponse = reply.raw;
    reply.header('x-request-id', req.id);
    setLeaderHeader(reply, deps.service);
    if (closing) done(new ApiError('unavailable', 'the node is shutting down'));
    else done();
  });

  const onAnswer = deps.onAnswer;
  if (onAnswer) {
    app.addHook('onSend', (req, _reply, payload, done) => {
      if (req.url.startsWith('/v1/')) onAnswer();
      done(null, payload);
    });
  }

  app.addHook('onResponse', (req, reply, done) => {
    durationOf(req.routeLabel || 'unmatched', req.method, reply.statusCode).observe(reply.elapsedTime / 1000);
    done();
  });

  app.addHook('preClose', async () => {
    closing = true;
    for (const ac of inflight) ac.abort(new Error('server shutting down'));
  });
  app.addHook('onClose', async () => {
    await forwarder.close();
  });
}

/** the leader hint (LEADER_HEADER) as this node knows it now */
function setLeaderHeader(reply: FastifyReply, service: LockService): void {
  let leaderApi: string | null = null;
  try {
    leaderApi = service.routing().leaderApi;
  } catch {
    // a removed node names no leader (routing() refuses): its clients fail over
  }
  if (leaderApi !== null) reply.header(LEADER_HEADER, leaderApi);
  else reply.removeHeader(LEADER_HEADER);
}

function sendError(reply: FastifyReply, e: ApiError): void {
  if (reply.sent) return;
  if (e.retryAfterS !== undefined) reply.header('retry-after', String(e.retryAfterS));
  reply.code(e.status).type('application/json; charset=utf-8').send(e.toBody());
}
