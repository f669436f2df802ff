// The real REST server over the node's service on a stand-in driver
// (test/server/services/service-fixture.ts), on a loopback port of its own: what the SDK
// tests in this folder talk to over real HTTP.
import type { FastifyInstance } from 'fastify';
import { buildServer } from '../../src/api/server.js';
import { Metrics } from '../../src/metrics.js';
import { LIMITS } from '../api/helpers.js';
import { setup } from '../server/services/service-fixture.js';

export interface ServiceServer {
  fx: ReturnType<typeof setup>;
  url: string;
  close(): Promise<void>;
}

/** starts one; `hook` adds fastify hooks before it listens; `fx`: serve that fixture (a
 *  second server over the same state) instead of a new one. Call close() when done. */
export async function startServiceServer(hook?: (app: FastifyInstance) => void, fx: ServiceServer['fx'] = setup()): Promise<ServiceServer> {
  const app = buildServer({ service: fx.svc, nodeId: 'n1', metrics: new Metrics({ defaultMetrics: false }), limits: LIMITS, logger: false });
  hook?.(app);
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  return {
    fx,
    url,
    close: async () => {
      app.server.closeAllConnections();
      await app.close();
    },
  };
}
