// GET /v1/snapshot (admin): a consistent backup taken through the leader
// (docs/operations.md "Taking a backup", `raftlock snapshot save`). A follower relays the
// request to the leader like any linearizable read; the leader confirms it still leads
// (ReadIndex) and answers with the backup file of its application state at the applied
// index.
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../errors.js';
import type { OpsService } from '../ops-service.js';
import { ok } from '../service-result.js';
import { parseQuery, querySchemas } from '../validate.js';
import { onLeader, type RoutePluginOptions } from './context.js';

export async function snapshotRoutes(app: FastifyInstance, { env, ops }: RoutePluginOptions & { ops?: OpsService | undefined }): Promise<void> {
  app.get('/v1/snapshot', async (req, reply) => {
    parseQuery(querySchemas.none, req.query);
    return onLeader(env, req, reply, { right: 'admin' }, async (ctx) => {
      if (!ops) throw new ApiError('not_found', 'this server cannot take backups');
      const r = await ops.backup(ctx);
      if (!r.ok) return r;
      const b = r.value;
      reply
        .type('application/octet-stream')
        .header('content-disposition', `attachment; filename="raftlock-${b.index}.backup"`)
        .header('x-raftlock-snapshot-index', String(b.index))
        .header('x-raftlock-snapshot-term', String(b.term))
        .header('cache-control', 'no-store');
      return ok(b.file);
    });
  });
}
