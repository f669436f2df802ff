// Peer transport throughput and latency between two HttpTransports on loopback.
//
//   node --import tsx bench/transport.ts [--seconds 5] [--bytes 0] [--burst 1000]
//
// throughput: n1 streams messages to n2 for --seconds (heartbeats, or single-entry
// appends of --bytes bytes), topping its queue up every event-loop turn without letting it
// overflow; we count what n2 receives. latency: 2,000 ping-pongs (heartbeat →
// heartbeatResp), one at a time, p50/p99/max.
import { HttpTransport } from '../src/transport/http-transport.js';
import type { Message, NodeId } from '../src/raft/core/types.js';

function arg(name: string, dflt: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const v = i >= 0 ? Number(process.argv[i + 1]) : dflt;
  if (!Number.isFinite(v) || v < 0) throw new Error(`--${name} must be a non-negative number`);
  return v;
}

/** heartbeat ctx values from here up are pings that n2 answers */
const PING = 2 ** 50;
const seconds = arg('seconds', 5);
const bytes = arg('bytes', 0);
const burst = arg('burst', 1000);
const quiet = { warn: () => {}, info: () => {}, error: (o: object, m?: string) => console.error(m, o), debug: () => {} };

async function node(id: NodeId): Promise<HttpTransport> {
  const t = new HttpTransport({ self: id, cluster: 'bench', listen: { host: '127.0.0.1', port: 0 }, peers: new Map(), logger: quiet, maxQueueMessages: 4 * burst });
  await t.start();
  return t;
}

function message(i: number, payload: Uint8Array): Message {
  return bytes === 0
    ? { from: 'n1', to: 'n2', term: 1, type: 'heartbeat', commit: i, ctx: i }
    : { from: 'n1', to: 'n2', term: 1, type: 'append', prevIndex: i, prevTerm: i === 0 ? 0 : 1, commit: i, entries: [{ index: i + 1, term: 1, kind: 'normal', data: payload }] };
}

async function main(): Promise<void> {
  const a = await node('n1');
  const b = await node('n2');
  const peers = new Map([['n1', `http://127.0.0.1:${a.address().port}`], ['n2', `http://127.0.0.1:${b.address().port}`]]);
  a.setPeers(peers);
  b.setPeers(peers);
  try {
    let received = 0;
    let pong: (() => void) | null = null;
    b.onMessage((m) => {
      received++;
      if (m.type === 'heartbeat' && m.ctx >= PING) b.send([{ from: 'n2', to: 'n1', term: 1, type: 'heartbeatResp', ctx: m.commit }]);
    });
    a.onMessage(() => pong?.());

    const payload = new Uint8Array(bytes).fill(7);
    let i = 0;
    const start = performance.now();
    const end = start + seconds * 1000;
    while (performance.now() < end) {
      if (a.queueLength('n2') < 2 * burst) {
        a.send(Array.from({ length: burst }, () => message(i++, payload)));
      }
      await new Promise((r) => setImmediate(r));
    }
    const elapsed = (performance.now() - start) / 1000;
    const stats = a.stats();
    const dropped = Object.values(stats.dropped).reduce((x, y) => x + y, 0);
    console.log(`throughput: ${Math.round(received / elapsed).toLocaleString('en')} msg/s delivered ` +
      `(${bytes ? `${bytes}-byte appends` : 'heartbeats'}; ${(stats.bytesSent / elapsed / 2 ** 20).toFixed(1)} MiB/s on the wire; ${dropped} dropped ${JSON.stringify(stats.dropped)})`);

    // drain, then ping-pong
    await new Promise<void>((r) => {
      const check = (): void => void (a.queueLength('n2') === 0 && received >= i - dropped ? r() : setTimeout(check, 10));
      check();
    });
    const lat: number[] = [];
    for (let k = 0; k < 2000; k++) {
      const t0 = performance.now();
      await new Promise<void>((r) => {
        pong = r;
        a.send([{ from: 'n1', to: 'n2', term: 1, type: 'heartbeat', commit: k, ctx: PING + k }]);
      });
      lat.push(performance.now() - t0);
    }
    lat.sort((x, y) => x - y);
    const q = (p: number): string => lat[Math.min(lat.length - 1, Math.floor(p * lat.length))]!.toFixed(2);
    console.log(`round trip (heartbeat → heartbeatResp): p50 ${q(0.5)} ms, p99 ${q(0.99)} ms, max ${q(1)} ms`);
  } finally {
    await a.close();
    await b.close();
  }
}

await main();
