// The fenced resource: a shared register per lock name that remembers the highest fencing
// token it has seen and rejects (409 stale_token) any read or write carrying a lower one —
// Kleppmann's storage service that makes lock expiry under pauses safe. With fencing off
// (the control run) it accepts everything, so a paused client's late write lands.
//
// Every read and write is appended to a JSON-lines log (its own order is the register's
// linearization), from which the fencing checker counts accepted-after-higher tokens and
// lost updates (a write whose client read a value another write has since replaced).
// Started by the runner with one JSON argument; prints {"port": N} once listening.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { appendFileSync } from 'node:fs';
import { clockFrom } from './recorder.js';

export interface ResourceArgs {
  logFile: string;
  fencing: boolean;
  t0: string;
  host: string;
}

export interface ResourceLogEntry {
  seq: number;
  t: number;
  op: 'read' | 'write';
  lock: string;
  token: number;
  accepted: boolean;
  /** the register's value before the op */
  before: number;
  /** highest token seen before the op */
  highest: number;
  /** write: the value written and the value the client had read */
  value?: number;
  read?: number;
  /** write accepted although the register moved since the client's read */
  lost?: boolean;
}

const args = JSON.parse(process.argv[2] ?? '{}') as ResourceArgs;
const now = clockFrom(BigInt(args.t0));
const registers = new Map<string, { value: number; highest: number }>();
let seq = 0;

function body(req: IncomingMessage): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    let s = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => {
      s += c;
      if (s.length > 65536) reject(new Error('body too large'));
    });
    req.on('end', () => {
      try {
        resolve(JSON.parse(s) as Record<string, unknown>);
      } catch (err) {
        reject(err as Error);
      }
    });
    req.on('error', reject);
  });
}

function answer(res: ServerResponse, status: number, b: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(b));
}

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const op = req.url === '/read' ? 'read' : req.url === '/write' ? 'write' : null;
  if (req.method !== 'POST' || !op) return answer(res, 404, { error: { code: 'not_found', message: 'POST /read or /write' } });
  const b = await body(req);
  const lock = b.lock;
  const token = b.token;
  if (typeof lock !== 'string' || typeof token !== 'number' || !Number.isSafeInteger(token)) {
    return answer(res, 400, { error: { code: 'invalid_request', message: 'lock (string) and token (integer) are required' } });
  }
  const r = registers.get(lock) ?? { value: 0, highest: 0 };
  registers.set(lock, r);
  const accepted = !args.fencing || token >= r.highest;
  const entry: ResourceLogEntry = { seq: seq++, t: now(), op, lock, token, accepted, before: r.value, highest: r.highest };
  if (op === 'write') {
    if (typeof b.value !== 'number' || typeof b.read !== 'number') return answer(res, 400, { error: { code: 'invalid_request', message: 'value and read are required' } });
    entry.value = b.value;
    entry.read = b.read;
    if (accepted) {
      entry.lost = b.read !== r.value;
      r.value = b.value;
    }
  }
  if (accepted) r.highest = Math.max(r.highest, token);
  appendFileSync(args.logFile, JSON.stringify(entry) + '\n');
  if (!accepted) return answer(res, 409, { error: { code: 'stale_token', message: `token ${token} is below ${r.highest}` } });
  return answer(res, 200, op === 'read' ? { value: entry.before } : { ok: true });
}

const server = createServer((req, res) => {
  handle(req, res).catch((err: unknown) => answer(res, 400, { error: { code: 'invalid_request', message: (err as Error).message } }));
});
server.listen(0, args.host, () => {
  const a = server.address();
  process.stdout.write(JSON.stringify({ port: typeof a === 'object' && a ? a.port : 0 }) + '\n');
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
