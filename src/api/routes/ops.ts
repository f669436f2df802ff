// Liveness, readiness and metrics (docs/contract.md §3 "Operations"). Never forwarded,
// never behind auth for /healthz and /readyz (load balancers and orchestrators call them
// without tokens).
import type { FastifyInstance } from 'fastify';
import type { Metrics } from '../../metrics.js';
import { ApiError } from '../errors.js';
import type { RoutePluginOptions } from './context.js';

export async function opsRoutes(app: FastifyInstance, { env, metrics }: RoutePluginOptions & { metrics: Metrics }): Promise<void> {
  app.get('/healthz', async () => ({ status: 'ok' }));

  app.get('/readyz', async () => {
    const why = env.service.notReadyReason?.() ?? null;
    if (why !== null) throw new ApiError('unavailable', `not ready: ${why}`);
    if (!env.service.ready()) throw new ApiError('unavailable', 'not ready: no leader known, or not caught up with the commit index');
    return { status: 'ready' };
  });

  app.get('/metrics', async (req, reply) => {
    env.authorize?.({ authorization: req.headers.authorization, right: 'read' });
    const { contentType, body } = await metrics.scrape();
    reply.type(contentType);
    return body;
  });
}
