// The transfer workload of a client process (docs/jepsen-lite.md "Workloads"), the
// contract's §5 example: move money between two accounts of the bank (resource-proc.ts)
// with both account locks taken together.
//
// Per iteration: pick two accounts (in a random order: acquire-all takes any order),
// `POST /v1/locks/acquire-all` both in the session (waiting up to wait_ms; a third ask for
// a max hold), read both balances at the bank with each account's token, "work", then
// write both in one fenced transaction (from − amount, to + amount, computed from what was
// read), and `POST /v1/locks/release-all`. A grant lost meanwhile (TTL under a client
// pause, a max hold, a revocation) must make the bank refuse the write: then nothing moved.
// test/checkers/history/transfer.ts proves the total conserved and every transfer applied once.
import { randomUUID } from 'node:crypto';
import type { Rng } from '../../src/raft/core/rng.js';
import { httpJson, type Outcome, type Recorder } from './recorder.js';
import { definite, num, post, sleep } from './client-http.js';
import { maxHoldOf } from './workloads.js';

export interface TransferCtx {
  rec: Recorder;
  /** the bank's URL (the resource process) */
  resource: string;
  accounts: readonly string[];
  noteSession(s: string, r: Outcome): void;
}

/** the grants of an acquire-all answer, by name */
export function setOf(body: Record<string, unknown>): { name: string; token: number }[] {
  const gs = Array.isArray(body.grants) ? (body.grants as Record<string, unknown>[]) : [];
  return gs.map((g) => ({ name: typeof g.name === 'string' ? g.name : '', token: num(g.fencing_token) ?? -1 }));
}

export async function transferIteration(ctx: TransferCtx, rng: Rng, s: string): Promise<void> {
  const n = ctx.accounts.length;
  const i = rng.int(0, n);
  let j = rng.int(0, n - 1);
  if (j >= i) j++;
  const from = ctx.accounts[i]!;
  const to = ctx.accounts[j]!;
  const names = rng.next() < 0.5 ? [from, to] : [to, from];
  const waitMs = rng.next() < 0.25 ? 0 : rng.int(100, 1500);
  const hold = maxHoldOf(rng);
  const acq = await ctx.rec.run(
    'acquire-all',
    { names, session: s, wait_ms: waitMs, ...hold },
    post('/v1/locks/acquire-all', { names, session_id: s, wait_ms: waitMs, ...hold }, waitMs + 2000),
    waitMs + 4000,
    (a) => definite(a, (b) => ({ set: setOf(b) })),
  );
  ctx.noteSession(s, acq);
  if (acq.type !== 'ok') return sleep(rng.int(0, 100));
  const tokens: Record<string, number> = {};
  for (const g of acq.value.set ?? []) tokens[g.name] = g.token;
  const bank = ctx.resource;
  const rd = await ctx.rec.run('bank-read', { tokens }, () => httpJson(`${bank}/bank/read`, 'POST', { tokens }, 2000), 2000, (a) =>
    definite(a, (b) => ({ balances: (b.balances ?? {}) as Record<string, number> })),
  );
  if (rd.type === 'ok' && rd.value.balances) {
    const read = rd.value.balances;
    await sleep(rng.int(50, 300)); // "work": the window a client pause can land in
    const amount = Math.min(read[from] ?? 0, rng.int(1, 20));
    if (amount > 0) {
      const transfer = { id: randomUUID().slice(0, 13), from, to, amount, tokens, read };
      // one HTTP attempt (the bank is a local process): a retry would be a second transfer
      await ctx.rec.run(
        'transfer',
        { transfer_id: transfer.id, from, to, amount, tokens, balances: read },
        () => httpJson(`${bank}/bank/transfer`, 'POST', transfer, 2000),
        0,
        (a) => definite(a, (b) => ({ balances: (b.balances ?? {}) as Record<string, number> })),
      );
    }
  }
  await sleep(rng.int(0, 100));
  const rel = await ctx.rec.run('release-all', { names, session: s }, post('/v1/locks/release-all', { names, session_id: s }, 1500), 3000, (a) =>
    definite(a, (b) => ({ released: Array.isArray(b.released) ? (b.released as string[]) : [] })),
  );
  ctx.noteSession(s, rel);
  await sleep(rng.int(0, 100));
}
