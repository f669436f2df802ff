// The inventory example against Redis: Redis itself refuses a paused lock holder's late
// write, through the two scripts of deploy/redis (exported by the SDK as FENCE_LUA and
// FENCED_SET_LUA).
//
//   npm run build && node bin/raftlock.js cluster &            # or any running cluster
//   node --import tsx examples/fenced-inventory-redis.ts --redis redis://HOST:6379 \
//        [--endpoints http://127.0.0.1:7001,…]
//
// (a unix socket: --redis /run/redis/redis-server.sock; without --redis, REDIS_URL, else
// redis://127.0.0.1:6379). The example writes two keys, `{inventory:widgets}:fence` and
// `{inventory:widgets}:stock` (one hash slot, for Redis Cluster), and resets both first so
// that it can run again against a fresh cluster whose tokens start over.
//
// Every sale fences before it reads: EVAL FENCE_LUA (from now on older tokens are
// refused); GET the stock; EVAL FENCED_SET_LUA with the new stock. Worker A takes the lock
// and sells a widget. It reads the stock for a second sale, and then it is paused — a GC
// pause, a stopped VM: nothing renews its session — for longer than its session's ttl.
// The cluster expires A's session and worker B, waiting in the queue, gets the lock with
// a larger fencing token and sells a widget. When A resumes, it writes the stock it
// computed before the pause: Redis refuses it (an RLF01 error reply; the SDK's
// mapFencingError gives a StaleFencingTokenError), and no sale is lost.
import { Redis } from 'ioredis';
import { FENCE_LUA, FENCED_SET_LUA, mapFencingError, RaftlockClient, StaleFencingTokenError } from '../src/index.js';

const RESOURCE = 'inventory/widgets';
const FENCE = '{inventory:widgets}:fence';
const STOCK = '{inventory:widgets}:stock';
const TTL_MS = 1000; // the smallest ttl `npm start`'s cluster allows (min_ttl_ms)

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

const endpoints = arg('--endpoints') ?? process.env.RAFTLOCK_ENDPOINTS ?? 'http://127.0.0.1:7001,http://127.0.0.1:7002,http://127.0.0.1:7003';
const target = arg('--redis') ?? process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const delay = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

interface Stock {
  stock: number;
  by: string;
  token: number;
}

/** EVAL FENCE_LUA: refuse every older token from now on (or throw StaleFencingTokenError) */
async function fence(redis: Redis, token: number): Promise<void> {
  try {
    await redis.eval(FENCE_LUA, 1, FENCE, String(token));
  } catch (err) {
    throw mapFencingError(err, { resource: RESOURCE, token });
  }
}

/** EVAL FENCED_SET_LUA: write the stock only if `token` is not stale (or throw StaleFencingTokenError) */
async function writeStock(redis: Redis, stock: number, by: string, token: number): Promise<void> {
  const value: Stock = { stock, by, token };
  try {
    await redis.eval(FENCED_SET_LUA, 2, FENCE, STOCK, String(token), JSON.stringify(value));
  } catch (err) {
    throw mapFencingError(err, { resource: RESOURCE, token });
  }
}

async function readStock(redis: Redis): Promise<Stock> {
  const raw = await redis.get(STOCK);
  if (raw === null) throw new Error(`${STOCK} is missing`);
  return JSON.parse(raw) as Stock;
}

/** one sale under the lock: fence, read, write stock − 1 */
async function sell(redis: Redis, who: string, token: number): Promise<number> {
  await fence(redis, token);
  const { stock } = await readStock(redis); // read after the fence: sees every earlier holder's write
  await writeStock(redis, stock - 1, who, token);
  return stock - 1;
}

async function main(): Promise<void> {
  const client = new RaftlockClient({ endpoints });
  const redisA = new Redis(target, { maxRetriesPerRequest: 2 });
  const redisB = new Redis(target, { maxRetriesPerRequest: 2 });
  try {
    // Demo only: a fresh cluster's tokens start over. Never delete a fence in production.
    await redisA.del(FENCE);
    await redisA.set(STOCK, JSON.stringify({ stock: 100, by: 'setup', token: 0 } satisfies Stock));

    // ---- worker A: takes the lock and sells one under it --------------------------------
    // A one-shot acquire opens a session of TTL_MS that only A's own calls renew.
    const a = await client.acquire(RESOURCE, { ttlMs: TTL_MS, owner: 'worker-A' });
    console.log(`worker-A holds ${RESOURCE} (token ${a.fencingToken}) and sold one: stock=${await sell(redisA, 'worker-A', a.fencingToken)}`);
    await fence(redisA, a.fencingToken);
    const staleRead = (await readStock(redisA)).stock;
    console.log(`worker-A read stock=${staleRead} for its next sale, and is paused for longer than its ttl (${TTL_MS} ms)…`);
    const pausedSince = Date.now();

    // ---- worker B: waits in the queue, gets the lock when A's session expires ------------
    await client.withLock(
      RESOURCE,
      async ({ fencingToken, signal }) => {
        signal.throwIfAborted();
        const stock = await sell(redisB, 'worker-B', fencingToken);
        console.log(`worker-B got the lock after A's session expired (token ${fencingToken}) and sold one: stock=${stock}`);
      },
      { ttlMs: 5000, waitMs: 30_000, owner: 'worker-B' },
    );

    // ---- worker A resumes and, unaware, writes the stock it computed before the pause ----
    await delay(Math.max(0, 2 * TTL_MS - (Date.now() - pausedSince)));
    console.log(`worker-A resumes after ${Date.now() - pausedSince} ms and writes stock=${staleRead - 1} with its old token ${a.fencingToken}:`);
    try {
      await writeStock(redisA, staleRead - 1, 'worker-A', a.fencingToken);
      console.log('  !!! Redis accepted the stale write — this must never happen');
      process.exitCode = 1;
    } catch (err) {
      if (!(err instanceof StaleFencingTokenError)) throw err;
      console.log(`  refused by Redis: ${(err.cause as Error).message}`);
    }

    const row = await readStock(redisB);
    console.log(`inventory: stock=${row.stock} written by ${row.by}`);
    if (row.by !== 'worker-B' || row.stock !== 98) {
      console.log('  !!! a sale was lost: expected stock=98 written by worker-B');
      process.exitCode = 1;
    } else {
      console.log('  two sales, two widgets gone: no sale lost');
    }
  } finally {
    await Promise.allSettled([redisA.quit(), redisB.quit(), client.close()]);
  }
}

main().catch((err: unknown) => {
  console.error(`fenced-inventory-redis: ${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 1;
});
