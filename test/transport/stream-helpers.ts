// Helpers for the stream tests: frames built by hand, and a raw stream client that writes
// given pieces of body (each piece a separate write on its own event-loop turn, so the
// receiver mostly sees them as separate chunks) and reports the answer.
import http from 'node:http';
import type { Message } from '../../src/raft/core/types.js';
import { encodeEnvelope } from '../../src/transport/codec.js';
import { STREAM_CONTENT_TYPE, STREAM_PATH, encodeStreamFrame } from '../../src/transport/stream-frames.js';

/** one wire frame (length + envelope [+ tag]) of messages n1 → n2 in cluster 'test' */
export function frameOf(messages: Message[], tag?: Uint8Array, cluster = 'test'): Buffer {
  return encodeStreamFrame(encodeEnvelope({ cluster, from: 'n1', to: 'n2', messages }), tag);
}

/** POST pieces as one chunked stream body to `url`'s stream route; resolves with the
 *  answer's status (0: none) once the connection is closed (the receiver closes it after
 *  its answer, whatever the answer) */
export function rawStream(url: string, pieces: Uint8Array[], headers: Record<string, string> = {}, path = STREAM_PATH): Promise<number> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    let status = 0;
    const req = http.request({ host: u.hostname, port: u.port, path, method: 'POST', agent: false, headers: { 'content-type': STREAM_CONTENT_TYPE, connection: 'close', ...headers } });
    const guard = setTimeout(() => {
      req.destroy();
      reject(new Error(`raw stream: connection still open after 10 s (status ${status})`));
    }, 10_000);
    req.on('socket', (s) => s.once('close', () => {
      clearTimeout(guard);
      resolve(status);
    }));
    req.on('response', (res) => {
      status = res.statusCode ?? 0;
      res.resume();
    });
    req.on('error', () => undefined); // a refused stream may reset our remaining writes
    void (async () => {
      for (const p of pieces) {
        if (req.destroyed) return;
        req.write(p);
        await new Promise((r) => setImmediate(r));
      }
      if (!req.destroyed) req.end();
    })();
  });
}

/** split bytes at the given offsets (unsorted, duplicates and out-of-range ignored) */
export function splitAt(bytes: Uint8Array, cuts: number[]): Uint8Array[] {
  const at = [...new Set(cuts.filter((c) => c > 0 && c < bytes.length))].sort((a, b) => a - b);
  const out: Uint8Array[] = [];
  let prev = 0;
  for (const c of [...at, bytes.length]) {
    out.push(bytes.subarray(prev, c));
    prev = c;
  }
  return out;
}
