// Why fencing tokens matter, in one runnable file.
//
//   npm run build && node bin/raftlock.js cluster &           # or any running cluster
//   node --import tsx examples/fenced-inventory.ts [--endpoints http://127.0.0.1:7001,…]
//
// An "inventory" service keeps a stock count. Two workers sell items; each must hold the
// lock `inventory/widgets` while it reads the count and writes it back. The inventory
// remembers the highest fencing token it has seen and REJECTS any write carrying an older
// one (Kleppmann, "How to do distributed locking"; Chubby's sequencers).
//
// Act 1 — normal operation: withLock serialises the workers; every write is accepted.
// Act 2 — the failure a lock alone cannot prevent: worker A takes the lock, then is cut off
// from the cluster (here: a proxy we cut; in life a partition, a GC pause, a stopped VM)
// for longer than its session ttl. The session expires, worker B gets the lock with a
// larger token and writes. A comes back and writes too — without fencing, its stale read
// would overwrite B's update (a lost sale). A's lock signal told it to stop before the
// server could expire the session, but a buggy or frozen worker may not listen; the
// inventory refuses A's older token anyway.
import { createServer, type Server } from 'node:http';
import { RaftlockClient, type Lock } from '../src/index.js';

/** The protected resource. It does not trust locks; it trusts monotonically increasing tokens. */
class Inventory {
  private stock = 100;
  private highestToken = 0;
  readonly log: string[] = [];

  read(): number {
    return this.stock;
  }

  /** Accepts a write only with a token at least as new as every token seen before. */
  write(stock: number, token: number, who: string): void {
    if (token < this.highestToken) {
      this.log.push(`REJECTED ${who}: token ${token} is older than ${this.highestToken}`);
      throw new Error(`stale fencing token ${token} (highest seen ${this.highestToken})`);
    }
    this.highestToken = token;
    this.stock = stock;
    this.log.push(`${who}: stock=${stock} (token ${token})`);
  }
}

function endpointsFromArgs(): string {
  const i = process.argv.indexOf('--endpoints');
  return (i >= 0 ? process.argv[i + 1] : undefined) ?? process.env.RAFTLOCK_ENDPOINTS ?? 'http://127.0.0.1:7001,http://127.0.0.1:7002,http://127.0.0.1:7003';
}

/** An HTTP relay to one node that we can cut, to stand in for a network partition. */
async function cuttableProxy(target: string): Promise<{ url: string; cut(): void; close(): Promise<void> }> {
  let cut = false;
  const server: Server = createServer((req, res) => {
    if (cut) return void req.socket.destroy();
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const headers: Record<string, string> = {};
      for (const h of ['content-type', 'idempotency-key']) if (typeof req.headers[h] === 'string') headers[h] = req.headers[h] as string;
      const body = chunks.length ? Buffer.concat(chunks) : undefined;
      fetch(target + (req.url ?? '/'), { method: req.method ?? 'GET', headers, ...(body ? { body } : {}) })
        .then(async (r) => {
          if (cut) return void req.socket.destroy();
          res.writeHead(r.status, { 'content-type': r.headers.get('content-type') ?? 'application/json' });
          res.end(Buffer.from(await r.arrayBuffer()));
        })
        .catch(() => req.socket.destroy());
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const addr = server.address();
  const url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  return { url, cut: () => void (cut = true), close: () => new Promise((r) => server.close(() => r())) };
}

const delay = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function sell(client: RaftlockClient, inv: Inventory, who: string, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    await client.withLock(
      'inventory/widgets',
      async ({ fencingToken, signal }) => {
        const stock = inv.read();
        await delay(5); // think time: without the lock, the two workers would interleave here
        signal.throwIfAborted(); // the lock can no longer be proven held: do not write
        inv.write(stock - 1, fencingToken, who);
      },
      { ttlMs: 5000, waitMs: 30_000, owner: who },
    );
  }
}

async function main(): Promise<void> {
  const client = new RaftlockClient({ endpoints: endpointsFromArgs() });
  try {
    // ---- Act 1 ----------------------------------------------------------------------------
    const inv = new Inventory();
    await Promise.all([sell(client, inv, 'worker-A', 5), sell(client, inv, 'worker-B', 5)]);
    console.log(`Act 1: 10 sales by two workers under the lock → stock ${inv.read()} (expected 90)`);

    // ---- Act 2 ----------------------------------------------------------------------------
    // Worker A reaches the cluster through a relay we can cut, with a short session ttl.
    const ttlMs = 1000;
    const proxy = await cuttableProxy(endpointsFromArgs().split(',')[0]!.trim());
    const clientA = new RaftlockClient({ endpoints: [proxy.url], timeoutMs: 500 });
    const sessionA = await clientA.session({ ttlMs, owner: 'worker-A' });
    const lockA: Lock = await sessionA.lock('inventory/widgets', { waitMs: 10_000 });
    const staleRead = inv.read();
    console.log(`Act 2: worker-A holds the lock (token ${lockA.fencingToken}) and read stock=${staleRead}; now it is cut off…`);
    lockA.signal.addEventListener('abort', () => console.log(`        worker-A's lock signal fired: ${(lockA.signal.reason as Error).message.slice(0, 80)}…`));
    proxy.cut();

    // Worker B waits in the queue and gets the lock once the cluster expires A's session.
    await client.withLock(
      'inventory/widgets',
      async ({ fencingToken }) => {
        inv.write(inv.read() - 1, fencingToken, 'worker-B');
        console.log(`        worker-B got the lock after A's session expired (token ${fencingToken}) and sold one: stock=${inv.read()}`);
      },
      { ttlMs: 5000, waitMs: 30_000, owner: 'worker-B' },
    );

    // A wakes up and, unaware, writes its stale value with its old token.
    console.log(`        worker-A comes back; lock signal aborted=${lockA.signal.aborted}, but it writes anyway (a buggy worker):`);
    try {
      inv.write(staleRead - 1, lockA.fencingToken, 'worker-A (stale)');
      console.log('        !!! the stale write was accepted — this must never happen');
      process.exitCode = 1;
    } catch (err) {
      console.log(`        the inventory refused it: ${(err as Error).message}`);
    }
    console.log(`Final stock ${inv.read()} (expected 89: no sale lost).\nInventory log:\n  ${inv.log.join('\n  ')}`);
    await sessionA.close().catch(() => undefined);
    await clientA.close();
    await proxy.close();
  } finally {
    await client.close();
  }
}

main().catch((err: unknown) => {
  console.error(`fenced-inventory: ${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 1;
});
