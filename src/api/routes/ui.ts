// The status page and the API docs (docs/operations.md "Status page", "API description:
// OpenAPI and /docs"): GET / (HTML shell), /ui/status.js, /ui/status.css, /docs and
// /openapi.json. All static and free of cluster data, served by the node itself (no outside
// network); the page's data comes from GET /v1/status.
import type { FastifyInstance, FastifyReply } from 'fastify';
import { openApiDocument } from '../openapi.js';
import type { ApiLimits } from '../validate.js';
import { docsHtml } from '../ui/docs-page.js';
import { STATUS_HTML } from '../ui/status-page.js';
import { STATUS_JS } from '../ui/status-script.js';
import { STATUS_CSS } from '../ui/status-style.js';
import { raftlockVersion } from '../../server/ops/format/version.js';

/** Paths that carry no cluster data: public even when auth is on (a browser cannot send a
 *  bearer token when it navigates; the data route still needs one). */
export const PUBLIC_UI_PATHS: ReadonlySet<string> = new Set(['/', '/ui/status.js', '/ui/status.css', '/docs', '/openapi.json']);

function asset(reply: FastifyReply, type: string, body: string): FastifyReply {
  return reply
    .type(type)
    .header('cache-control', 'no-cache')
    .header('x-content-type-options', 'nosniff')
    .header('x-frame-options', 'DENY')
    .header('referrer-policy', 'no-referrer')
    .send(body);
}

export async function uiRoutes(app: FastifyInstance, { limits }: { limits: ApiLimits }): Promise<void> {
  let doc: Record<string, unknown> | null = null;
  let docs: string | null = null;
  const openapi = (): Record<string, unknown> => (doc ??= openApiDocument(limits, raftlockVersion()));

  app.get('/', async (_req, reply) => asset(reply, 'text/html; charset=utf-8', STATUS_HTML));
  app.get('/ui/status.js', async (_req, reply) => asset(reply, 'text/javascript; charset=utf-8', STATUS_JS));
  app.get('/ui/status.css', async (_req, reply) => asset(reply, 'text/css; charset=utf-8', STATUS_CSS));
  app.get('/openapi.json', async (_req, reply) => asset(reply, 'application/json; charset=utf-8', JSON.stringify(openapi())));
  app.get('/docs', async (_req, reply) => asset(reply, 'text/html; charset=utf-8', (docs ??= docsHtml(openapi()))));
}
