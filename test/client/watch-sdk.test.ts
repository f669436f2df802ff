// client.watch and client.observe against stub servers that script the SSE stream
// (docs/client.md "Watching"): a resume after a cut in the middle of one index's events
// gives each event once, a resume point no endpoint keeps is a CompactedError, and observe
// follows an election's leader from its `kind: "election"` events (a resign and the next
// win in one command are one step).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, describe, it } from 'node:test';
import { CompactedError, RaftlockClient, type WatchEvent, type WatchSynced } from '@raftlock/client';
import { binPath } from '../support/cluster-harness.js';

type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

async function stub(handler: Handler): Promise<{ url: string; requests: string[]; close(): Promise<void> }> {
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    requests.push(req.url ?? '');
    handler(req, res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, requests, close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }) };
}

const sse = (res: http.ServerResponse): void => {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
};
const ev = (index: number, event: string, data: Record<string, unknown>): string => `id: ${index}\nevent: ${event}\ndata: ${JSON.stringify({ ...data, index })}\n\n`;
const lock = (name: string, sid: string): Record<string, unknown> => ({ kind: 'lock', name, session_id: sid, mode: 'exclusive' });

async function take<T>(it: AsyncIterable<T>, n: number): Promise<T[]> {
  const out: T[] = [];
  if (n === 0) return out;
  for await (const x of it) {
    out.push(x);
    if (out.length >= n) break;
  }
  return out;
}

describe('client.watch', () => {
  const closers: (() => Promise<void>)[] = [];
  after(async () => {
    for (const c of closers) await c();
  });

  it('a cut inside one index\'s events: the next node re-sends the group, the SDK skips what it gave', async () => {
    let aCalls = 0;
    const a = await stub((_req, res) => {
      aCalls++;
      if (aCalls > 1) {
        res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '30' });
        res.end(JSON.stringify({ error: { code: 'unavailable', message: 'down' } }));
        return;
      }
      sse(res);
      res.write('id: 5\n\n');
      res.write(ev(6, 'released', lock('x', 's1')) + ev(6, 'acquired', lock('x', 's2')));
      // index 7 has two events; the node dies after the first
      res.write(ev(7, 'released', lock('y', 's3')), () => setTimeout(() => res.socket?.destroy(), 20));
    });
    const b = await stub((req, res) => {
      sse(res);
      assert.match(req.url ?? '', /from_index=6(&|$)/, 'resumes after the index before the cut group');
      res.write(ev(7, 'released', lock('y', 's3')) + ev(7, 'acquired', lock('y', 's4')));
      res.write(ev(8, 'waiting', lock('z', 's5')));
    });
    closers.push(a.close, b.close);
    const client = new RaftlockClient({ endpoints: [a.url, b.url], random: () => 0 });
    closers.push(() => client.close());
    const got = await take(client.watch('', { idleTimeoutMs: 5000 }), 6);
    const show = (e: WatchEvent | WatchSynced): string => (e.event === 'synced' ? `synced ${e.index}` : `${e.index} ${e.event} ${e.name} ${e.session_id}`);
    assert.deepEqual(got.map(show), ['synced 5', '6 released x s1', '6 acquired x s2', '7 released y s3', '7 acquired y s4', '8 waiting z s5']);
    assert.equal(b.requests.length, 1);
  });

  it('a resumed node that sends events from before the resume point first: they are dropped and the group is still given once', async () => {
    // what a restarted node replaying its log did before docs/jepsen-lite.md's watch fix
    let aCalls = 0;
    const a = await stub((_req, res) => {
      if (++aCalls > 1) {
        res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '30' });
        res.end(JSON.stringify({ error: { code: 'unavailable', message: 'down' } }));
        return;
      }
      sse(res);
      res.write('id: 5\n\n');
      res.write(ev(6, 'acquired', lock('x', 's1')) + ev(7, 'released', lock('y', 's3')), () => setTimeout(() => res.socket?.destroy(), 20));
    });
    const b = await stub((_req, res) => {
      sse(res);
      res.write(ev(6, 'acquired', lock('x', 's1')) + ev(7, 'released', lock('y', 's3')) + ev(7, 'acquired', lock('y', 's4')) + ev(8, 'waiting', lock('z', 's5')));
    });
    closers.push(a.close, b.close);
    const client = new RaftlockClient({ endpoints: [a.url, b.url], random: () => 0 });
    closers.push(() => client.close());
    const got = await take(client.watch('', { idleTimeoutMs: 5000 }), 5);
    const show = (e: WatchEvent | WatchSynced): string => (e.event === 'synced' ? `synced ${e.index}` : `${e.index} ${e.event} ${e.name} ${e.session_id}`);
    assert.deepEqual(got.map(show), ['synced 5', '6 acquired x s1', '7 released y s3', '7 acquired y s4', '8 waiting z s5']);
  });

  it('fromIndex that no endpoint keeps: CompactedError with the compacted index, after asking each', async () => {
    const gone: Handler = (_req, res) => {
      res.writeHead(410, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { code: 'compacted', message: 'gone', compacted_index: 900 } }));
    };
    const a = await stub(gone);
    const b = await stub(gone);
    closers.push(a.close, b.close);
    const client = new RaftlockClient({ endpoints: [a.url, b.url], random: () => 0 });
    closers.push(() => client.close());
    await assert.rejects(take(client.watch('p/', { fromIndex: 12 }), 1), (err: unknown) => err instanceof CompactedError && err.compactedIndex === 900);
    assert.ok(a.requests[0]?.includes('from_index=12') && a.requests[0].includes('prefix=p%2F'));
    assert.equal(b.requests.length, 1, 'the other endpoint was asked too');
    assert.throws(() => client.watch('', { fromIndex: -1 }), /fromIndex/);
  });
});

describe('client.observe', () => {
  const closers: (() => Promise<void>)[] = [];
  after(async () => {
    for (const c of closers) await c();
  });

  it('the current leader first, then each change; one command\'s resign + win is one step; other names ignored', async () => {
    const el = (sid: string, token: number, value: string): Record<string, unknown> => ({ kind: 'election', name: 'svc', session_id: sid, fencing_token: token, value });
    const s = await stub((req, res) => {
      assert.match(req.url ?? '', /prefix=svc/);
      sse(res);
      res.write(`event: state\ndata: ${JSON.stringify({ ...el('a', 10, 'host-a'), index: 20 })}\n\n`);
      res.write(`event: state\ndata: ${JSON.stringify({ kind: 'election', name: 'svc2', session_id: 'q', fencing_token: 11, value: 'other', index: 20 })}\n\n`);
      res.write('id: 20\n\n');
      setTimeout(() => {
        res.write(ev(21, 'resigned', el('a', 10, 'host-a')) + ev(21, 'acquired', el('b', 21, 'host-b')));
        res.write(ev(22, 'acquired', { ...el('q', 22, 'x'), name: 'svc2' }));
        res.write(ev(23, 'proclaimed', el('b', 21, 'host-b2')));
        res.write(ev(24, 'expired', { ...el('b', 21, 'host-b2'), reason: 'session_expired' }));
      }, 50);
    });
    closers.push(s.close);
    const client = new RaftlockClient({ endpoints: [s.url] });
    closers.push(() => client.close());
    const got = await take(client.observe('svc'), 4);
    assert.deepEqual(got.map((l) => (l === null ? null : `${l.session_id} ${l.value} ${l.fencing_token}`)), ['a host-a 10', 'b host-b 21', 'b host-b2 21', null]);
  });
});

/** runs the CLI until it printed `lines` lines on stdout, then Ctrl-C; its lines and exit code */
function cliLines(args: string[], lines: number): Promise<{ out: string[]; code: number | null }> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [binPath, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, RAFTLOCK_ENDPOINTS: '' } });
    let text = '';
    let err = '';
    const timer = setTimeout(() => {
      p.kill('SIGKILL');
      reject(new Error(`raftlock ${args.join(' ')}: ${lines} lines not printed in time; stdout ${JSON.stringify(text)} stderr ${JSON.stringify(err)}`));
    }, 30_000);
    p.stdout.on('data', (c: Buffer) => {
      text += c.toString();
      if (text.split('\n').length > lines) p.kill('SIGINT');
    });
    p.stderr.on('data', (c: Buffer) => (err += c.toString()));
    p.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ out: text.split('\n').filter(Boolean), code });
    });
  });
}

describe('raftlock watch / observe', () => {
  it('watch --json prints one JSON object per line; the table has a header; observe prints leaders; Ctrl-C exits 0', async () => {
    const s = await stub((_req, res) => {
      sse(res);
      res.write(`event: state\ndata: ${JSON.stringify({ kind: 'election', name: 'svc', session_id: 'a', fencing_token: 3, value: 'host-a', index: 9 })}\n\n`);
      res.write('id: 9\n\n');
      res.write(ev(10, 'acquired', { kind: 'lock', name: 'jobs/x', session_id: 's1', fencing_token: 10, mode: 'exclusive' }));
    });
    try {
      const j = await cliLines(['watch', '--endpoints', s.url, '--json'], 3);
      assert.equal(j.code, 0);
      assert.deepEqual(j.out.map((l) => (JSON.parse(l) as { event: string }).event), ['state', 'synced', 'acquired']);
      const t = await cliLines(['watch', '--endpoints', s.url, '--prefix', 'jobs/'], 4);
      assert.match(t.out[0]!, /^INDEX\s+EVENT\s+KIND\s+NAME/);
      assert.match(t.out[3]!, /^10\s+acquired\s+lock\s+jobs\/x\s+s1\s+10/);
      const o = await cliLines(['observe', 'svc', '--endpoints', s.url], 1);
      assert.equal(o.out[0], 'svc: host-a (session a, token 3, index 9)');
    } finally {
      await s.close();
    }
  });
});
