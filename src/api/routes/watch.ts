// GET /v1/watch (docs/contract.md §4 "Watch"): server-sent events from this node's own
// feed — never relayed to the leader: every node has the same events in the same order.
// The reply is hijacked from fastify and written raw, so the feed writes frames straight
// to the socket and sees its backlog (writableLength) to cut off a reader that lags.
import type { FastifyInstance } from 'fastify';
import { ApiError, invalid } from '../errors.js';
import { answerOf } from '../failure-edge.js';
import { parseQuery, querySchemas } from '../validate.js';
import { WATCH_STREAM_BUFFER_BYTES, type WatchFeed, type WatchSink, type WatchSubscription } from '../watch-feed.js';
import type { RoutePluginOptions } from './context.js';
import { namePrefix } from './named-path.js';

const LAST_EVENT_ID_RE = /^\d{1,16}$/;

export async function watchRoutes(app: FastifyInstance, { env, feed, bufferBytes = WATCH_STREAM_BUFFER_BYTES }: RoutePluginOptions & { feed?: WatchFeed | undefined; bufferBytes?: number | undefined }): Promise<void> {
  app.get('/v1/watch', async (req, reply) => {
    req.routeLabel = '/v1/watch';
    if (!feed) throw new ApiError('not_found', 'this server has no watch feed');
    const q = parseQuery(querySchemas.watch, req.query);
    const prefix = namePrefix(q.prefix);
    let fromIndex: number | null = q.from_index ?? null;
    const lastId = req.headers['last-event-id'];
    if (fromIndex === null && lastId !== undefined) {
      const v = Array.isArray(lastId) ? lastId[0] : lastId;
      if (v === undefined || !LAST_EVENT_ID_RE.test(v.trim()) || !Number.isSafeInteger(Number(v.trim()))) throw invalid('header.last-event-id', `expected a log index, got ${JSON.stringify(String(v).slice(0, 40))}`);
      fromIndex = Number(v.trim());
    }
    env.authorize?.({ authorization: req.headers.authorization, right: 'read', name: prefix });

    const raw = reply.raw;
    let head = false;
    const writeHead = (): void => {
      if (head) return;
      head = true;
      const headers: Record<string, string | number | string[]> = {};
      for (const [k, v] of Object.entries(reply.getHeaders())) if (v !== undefined) headers[k] = v as string | number | string[];
      raw.writeHead(200, Object.assign(headers, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache, no-store', 'x-accel-buffering': 'no' }));
      // no Nagle delay for a stream of small frames
      raw.socket?.setNoDelay(true);
    };
    const sink: WatchSink = {
      write(chunk) {
        if (raw.destroyed || raw.writableEnded) return false;
        writeHead();
        raw.write(chunk);
        return raw.writableLength <= bufferBytes;
      },
      end() {
        if (raw.writableEnded || raw.destroyed) return;
        writeHead();
        // a stream cut for being slow must not wait for its backlog to drain
        if (raw.writableLength > bufferBytes) raw.destroy();
        else raw.end();
      },
    };
    // a refusal (410 / 429 / 503) comes before anything is written: the error handler answers it
    const sub: WatchSubscription = answerOf(feed.open(prefix, fromIndex, sink));
    reply.hijack();
    writeHead();
    const stop = (): void => {
      sub.close();
      sink.end('closed');
    };
    raw.once('close', () => sub.close());
    // server shutdown (preClose aborts every request in flight)
    req.abortController.signal.addEventListener('abort', stop, { once: true });
    if (req.abortController.signal.aborted) stop();
  });
}
