// The fenced resource: a shared register per lock name that remembers the highest fencing
// token it has seen and rejects (409 stale_token) any read or write carrying a lower one —
// Kleppmann's storage service that makes lock expiry under pauses safe. With fencing off
// (the control run) it accepts everything, so a paused client's late write lands.
//
// Every read and write is appended to a JSON-lines log (its own order is the register's
// linearization), from which the fencing checker counts accepted-after-higher tokens and
// lost updates (a write whose client read a value another write has since replaced).
//
// The access-logged resource (`POST /begin`, `POST /end`) serves the shared-lock and
// semaphore workloads: a client holding a grant begins using the resource, "works", and
// ends. Every begin and end is logged (access.jsonl) with the grant's token, the mode
// (read for a shared holder, write for an exclusive one) or the permits (a semaphore
// holder), and the resource's own count of accesses in progress, so the checkers see the
// interval of every access (test/checkers/history/shared.ts). Fencing for shared locks, at begin and at
// end (a reader validates what it read, as a seqlock does): a read is refused when a write
// with a higher token has begun since; a write is refused when any access with a higher
// token has begun since. Then no two accepted accesses on a name overlap with one of them
// a write. Semaphore holders run side by side, so their tokens are not ordered against
// each other and fence nothing here: the resource only counts them.
//
// The bank (`POST /bank/read`, `POST /bank/transfer`) serves the transfer workload: one
// balance per account (ja-…, OPENING_BALANCE each), as rows of a database table guarded
// by a fencing-token column. A read names each account with the token of its grant; a
// transfer sets both balances from what the client read (read-modify-write, as a service
// does) in one transaction, refused whole (409 stale_token) when either token is below the
// highest the account has seen. Every transfer, accepted or not, goes to bank.jsonl with
// the balances before and after, from which test/checkers/history/transfer.ts proves the total
// conserved and no transfer lost or applied twice.
// Started by the runner with one JSON argument; prints {"port": N} once listening.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { appendFileSync } from 'node:fs';
import { clockFrom } from './recorder.js';
import type { AccessLogEntry, BankLogEntry, ResourceLogEntry } from '../checkers/history/resource-logs.js';

export interface ResourceArgs {
  logFile: string;
  /** where begin/end of the access-logged resource go */
  accessLogFile: string;
  fencing: boolean;
  /** where the bank's transfers go (absent: no bank) */
  bankLogFile?: string;
  /** every account's opening balance */
  openingBalance?: number;
  t0: string;
  host: string;
}

const args = JSON.parse(process.argv[2] ?? '{}') as ResourceArgs;
const now = clockFrom(BigInt(args.t0));
const registers = new Map<string, { value: number; highest: number }>();
let seq = 0;
/** per name: accesses in progress by token, and the highest tokens begun */
const access = new Map<string, { open: Map<number, { mode?: 'read' | 'write'; permits: number }>; highestWrite: number; highestAny: number }>();
let accessSeq = 0;

/** the begin/end of one access (see the header); answers 200, or 409 stale_token */
function onAccess(phase: 'begin' | 'end', b: Record<string, unknown>): { status: number; body: unknown } {
  const name = b.name;
  const token = b.token;
  const mode = b.mode === 'read' || b.mode === 'write' ? b.mode : undefined;
  const permits = b.permits;
  if (typeof name !== 'string' || typeof token !== 'number' || !Number.isSafeInteger(token) || (mode === undefined && (typeof permits !== 'number' || !Number.isSafeInteger(permits) || permits < 1))) {
    return { status: 400, body: { error: { code: 'invalid_request', message: 'name (string), token (integer), and mode (read|write) or permits (integer ≥ 1) are required' } } };
  }
  const st = access.get(name) ?? { open: new Map(), highestWrite: 0, highestAny: 0 };
  access.set(name, st);
  const fenced = args.fencing && mode !== undefined;
  const accepted = !fenced || (mode === 'read' ? token >= st.highestWrite : token >= st.highestAny);
  const entry: AccessLogEntry = { seq: accessSeq++, t: now(), phase, name, token, accepted, highestWrite: st.highestWrite, highestAny: st.highestAny, active: 0 };
  if (mode !== undefined) entry.mode = mode;
  else entry.permits = permits as number;
  if (phase === 'begin' && accepted) {
    st.open.set(token, { ...(mode ? { mode } : {}), permits: mode ? 1 : (permits as number) });
    st.highestAny = Math.max(st.highestAny, token);
    if (mode === 'write') st.highestWrite = Math.max(st.highestWrite, token);
  }
  // an end closes the access whatever the verdict: a refused end means its work is void
  if (phase === 'end') st.open.delete(token);
  entry.active = [...st.open.values()].reduce((n, a) => n + a.permits, 0);
  appendFileSync(args.accessLogFile, JSON.stringify(entry) + '\n');
  if (!accepted) return { status: 409, body: { error: { code: 'stale_token', message: `token ${token} is below ${mode === 'read' ? st.highestWrite : st.highestAny}` } } };
  return { status: 200, body: { ok: true, active: entry.active } };
}

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

const accounts = new Map<string, { balance: number; highest: number }>();
let bankSeq = 0;
const account = (name: string): { balance: number; highest: number } => {
  let a = accounts.get(name);
  if (!a) accounts.set(name, (a = { balance: args.openingBalance ?? 100, highest: 0 }));
  return a;
};
const isInt = (x: unknown): x is number => typeof x === 'number' && Number.isSafeInteger(x);

/** the bank (see the header): fenced reads and transfers of the transfer workload */
function onBank(op: 'read' | 'transfer', b: Record<string, unknown>): { status: number; body: unknown } {
  const tokens = b.tokens as Record<string, unknown> | undefined;
  if (!tokens || typeof tokens !== 'object' || Object.values(tokens).some((t) => !isInt(t))) return { status: 400, body: { error: { code: 'invalid_request', message: 'tokens: { account: integer } is required' } } };
  const fenced = (name: string): boolean => !args.fencing || (tokens[name] as number) >= account(name).highest;
  if (op === 'read') {
    const names = Object.keys(tokens);
    const stale = names.filter((n) => !fenced(n));
    if (stale.length) return { status: 409, body: { error: { code: 'stale_token', message: `stale token for ${stale.join(', ')}` } } };
    for (const n of names) account(n).highest = Math.max(account(n).highest, tokens[n] as number);
    return { status: 200, body: { balances: Object.fromEntries(names.map((n) => [n, account(n).balance])) } };
  }
  const { id, from, to, amount } = b;
  const read = b.read as Record<string, unknown> | undefined;
  if (typeof id !== 'string' || typeof from !== 'string' || typeof to !== 'string' || from === to || !isInt(amount) || !isInt(tokens[from]) || !isInt(tokens[to]) || !read || !isInt(read[from]) || !isInt(read[to])) {
    return { status: 400, body: { error: { code: 'invalid_request', message: 'id, from, to (two accounts), amount, tokens and read of both accounts are required' } } };
  }
  const a = account(from);
  const c = account(to);
  const accepted = fenced(from) && fenced(to);
  const entry: BankLogEntry = {
    seq: bankSeq++,
    t: now(),
    id,
    from,
    to,
    amount,
    tokens: { [from]: tokens[from] as number, [to]: tokens[to] as number },
    read: { [from]: read[from] as number, [to]: read[to] as number },
    accepted,
    highest: { [from]: a.highest, [to]: c.highest },
    before: { [from]: a.balance, [to]: c.balance },
    after: { [from]: a.balance, [to]: c.balance },
  };
  if (accepted) {
    // one transaction: both rows written from what the client read, both fences moved
    a.balance = (read[from] as number) - amount;
    c.balance = (read[to] as number) + amount;
    a.highest = Math.max(a.highest, tokens[from] as number);
    c.highest = Math.max(c.highest, tokens[to] as number);
    entry.after = { [from]: a.balance, [to]: c.balance };
  }
  if (args.bankLogFile) appendFileSync(args.bankLogFile, JSON.stringify(entry) + '\n');
  if (!accepted) return { status: 409, body: { error: { code: 'stale_token', message: `a token is below the highest its account has seen (${from}: ${a.highest}, ${to}: ${c.highest})` } } };
  return { status: 200, body: { ok: true, balances: entry.after } };
}

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (req.method === 'POST' && (req.url === '/bank/read' || req.url === '/bank/transfer')) {
    const a = onBank(req.url === '/bank/read' ? 'read' : 'transfer', await body(req));
    return answer(res, a.status, a.body);
  }
  if (req.method === 'POST' && (req.url === '/begin' || req.url === '/end')) {
    const a = onAccess(req.url === '/begin' ? 'begin' : 'end', await body(req));
    return answer(res, a.status, a.body);
  }
  const op = req.url === '/read' ? 'read' : req.url === '/write' ? 'write' : null;
  if (req.method !== 'POST' || !op) return answer(res, 404, { error: { code: 'not_found', message: 'POST /read, /write, /begin, /end, /bank/read or /bank/transfer' } });
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
    if (typeof b.writer === 'string') entry.writer = b.writer.slice(0, 64);
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
