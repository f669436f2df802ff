// A worker process of a fenced-store run (test/support/fence-run.ts): a service instance
// that takes the lock in a kept-alive session, "thinks" for a while holding it, then
// increments a counter in MySQL or Redis through the fence with its token
// (fence-stores.ts). It writes even after its lock's signal fired — the buggy or frozen
// worker that fencing exists for — so that the store alone decides. The runner SIGSTOPs
// it while it thinks, past its session's TTL.
//
// Started with one JSON argument (WorkerArgs); prints one JSON line per event
// (WorkerEvent) on stdout; finishes its round and exits when a line `stop` arrives on
// stdin (or at its own deadline, so that an orphan never lingers).
import { createInterface } from 'node:readline';
import { RaftlockClient, LockHeldError, type Session } from '../../src/index.js';
import { openFencedCounter, type StoreKind, type WriteOutcome } from './fence-stores.js';

export interface WorkerArgs {
  name: string;
  endpoints: string[];
  store: StoreKind;
  /** mysql: a mysql2 URL; redis: the unix socket */
  target: string;
  /** the lock's name, also the fenced resource */
  lock: string;
  ttlMs: number;
  /** how long the worker holds the lock before it starts its write (the pause window) */
  thinkMs: number;
  /** exit by itself at this Date.now() */
  deadline: number;
}

export type WorkerEvent =
  | { ev: 'ready'; name: string }
  | { ev: 'holding'; name: string; token: number; t: number }
  | ({ ev: 'write'; name: string; token: number; tStart: number; t: number; signalAborted: boolean } & WriteOutcome)
  | { ev: 'note'; name: string; message: string };

const args = JSON.parse(process.argv[2] ?? '{}') as WorkerArgs;
const emit = (e: WorkerEvent): void => void process.stdout.write(JSON.stringify(e) + '\n');
const delay = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

let stopping = false;
createInterface({ input: process.stdin }).on('line', (l) => {
  if (l.trim() === 'stop') stopping = true;
});
setTimeout(() => process.exit(3), Math.max(0, args.deadline - Date.now())).unref();

async function main(): Promise<void> {
  const client = new RaftlockClient({ endpoints: args.endpoints, timeoutMs: 2000 });
  const counter = await openFencedCounter(args.store, args.target, args.lock);
  emit({ ev: 'ready', name: args.name });
  let session: Session | undefined;
  try {
    while (!stopping) {
      try {
        if (!session || session.signal.aborted) {
          await session?.close().catch(() => undefined);
          session = await client.session({ ttlMs: args.ttlMs, owner: args.name });
        }
        const lock = await session.lock(args.lock, { waitMs: 2000 });
        emit({ ev: 'holding', name: args.name, token: lock.fencingToken, t: Date.now() });
        await delay(args.thinkMs);
        const tStart = Date.now();
        const out = await counter.increment(lock.fencingToken, args.name, () => delay(5));
        emit({ ev: 'write', name: args.name, token: lock.fencingToken, tStart, t: Date.now(), signalAborted: lock.signal.aborted, ...out });
        await lock.release().catch(() => undefined);
      } catch (err) {
        if (!(err instanceof LockHeldError)) emit({ ev: 'note', name: args.name, message: err instanceof Error ? `${err.name}: ${err.message}` : String(err) });
        await delay(20);
      }
    }
  } finally {
    await session?.close().catch(() => undefined);
    await Promise.allSettled([counter.close(), client.close()]);
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    emit({ ev: 'note', name: args.name, message: `fatal: ${err instanceof Error ? err.stack : String(err)}` });
    process.exit(1);
  },
);
