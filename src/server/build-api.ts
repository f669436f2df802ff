// The node's REST server (src/api) over its services, with the security guards installed.
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { buildServer } from '../api/server.js';
import { trace, tracing } from '../raft/trace.js';
import type { Config } from '../config.js';
import type { Metrics } from '../metrics.js';
import type { NodeSecurity } from '../security/node-security.js';
import type { RaftLockService } from './services/lock-service.js';
import type { OpsProvider } from './ops/ops-provider.js';
import type { WatchHub } from './watch/watch-hub.js';

export interface ApiParts {
  config: Config;
  nodeId: string;
  service: RaftLockService;
  ops: OpsProvider;
  watch: WatchHub;
  metrics: Metrics;
  security: NodeSecurity;
  forwardTimeoutMs: number;
  logger: Logger;
}

export function buildApi(p: ApiParts): FastifyInstance {
  const { config, security, logger } = p;
  const server = buildServer({
    service: p.service,
    ops: p.ops,
    nodeId: p.nodeId,
    metrics: p.metrics,
    logger: logger.child({ component: 'api' }),
    requestLogging: logger.isLevelEnabled('debug'),
    limits: { minTtlMs: config.session.minTtlMs, maxTtlMs: config.session.maxTtlMs },
    forwardTimeoutMs: p.forwardTimeoutMs,
    watch: p.watch,
    ...(security.https ? { https: security.https } : {}),
    ...(security.apiClientConnect ? { apiClientConnect: security.apiClientConnect } : {}),
    ...(security.authorize ? { authorize: security.authorize } : {}),
    // the per-step trace's last server step (src/raft/trace.ts): when the answer is handed to the socket
    ...(tracing ? { onAnswer: () => trace('http_answer', '-', -1) } : {}),
  });
  security.installApiGuards(server);
  return server;
}
