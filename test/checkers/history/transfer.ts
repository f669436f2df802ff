// Checker 12, the transfer workload (docs/jepsen-lite.md "Checkers"): the bank's log
// (bank.jsonl, resource-proc.ts) replayed against a ledger. Every account opens with the
// same balance; each accepted transfer moves `amount` from one account to the other, and
// the bank wrote both balances from what the client had read. So, in the bank's order:
// - a transfer id is accepted at most once (else: duplicated);
// - each accepted write leaves both accounts at their ledger balance (opening + what the
//   accepted transfers so far moved in − out): a write computed from a balance another
//   transfer had since changed overwrites that transfer's effect (lost) — which two
//   holders of one account at once produce, or a holder whose grant ended (a pause, a max
//   hold, a revocation) whose late write the fence let through;
// - the total over every account stays what it opened with (conserved);
// - no accepted write carries a token below one its account saw before (fencing);
// and against the history: a transfer answered ok was accepted by the bank, one answered
// stale_token was not, and the bank accepted no transfer that no client sent.
// With fencing off (the control run) the losses are counted, not violations.
import type { Op } from './history.js';
import type { BankLogEntry } from './resource-logs.js';

export interface TransferReport {
  transfers: number;
  accepted: number;
  rejected: number;
  /** accepted writes that overwrote another transfer's effect */
  lost: number;
  staleAccepted: number;
  /** the total at the end, and what it opened with */
  total: number;
  openingTotal: number;
  violations: string[];
}

export function checkTransfers(ops: readonly Op[], log: readonly BankLogEntry[], accounts: readonly string[], opening: number, fencing: boolean): TransferReport {
  const r: TransferReport = { transfers: 0, accepted: 0, rejected: 0, lost: 0, staleAccepted: 0, total: 0, openingTotal: accounts.length * opening, violations: [] };
  const actual = new Map<string, number>(accounts.map((a) => [a, opening]));
  const ledger = new Map<string, number>(accounts.map((a) => [a, opening]));
  const highest = new Map<string, number>();
  const acceptedIds = new Map<string, number>();
  const lastWriter = new Map<string, BankLogEntry>();
  const bad = (msg: string): void => void (fencing ? r.violations.push(msg) : undefined);
  for (const e of [...log].sort((a, b) => a.seq - b.seq)) {
    r.transfers++;
    if (!e.accepted) {
      r.rejected++;
      continue;
    }
    r.accepted++;
    if (acceptedIds.has(e.id)) r.violations.push(`transfer: ${e.id} (${e.from} → ${e.to}, ${e.amount}) was applied twice (bank entries ${acceptedIds.get(e.id)} and ${e.seq}): duplicated`);
    acceptedIds.set(e.id, e.seq);
    for (const acc of [e.from, e.to]) {
      if (!actual.has(acc)) {
        actual.set(acc, opening);
        ledger.set(acc, opening);
      }
      const t = e.tokens[acc]!;
      const h = highest.get(acc) ?? 0;
      if (t < h) {
        r.staleAccepted++;
        bad(`fencing: the bank accepted token ${t} on ${acc} after token ${h} (transfer ${e.id}, entry ${e.seq})`);
      }
      highest.set(acc, Math.max(h, t));
    }
    ledger.set(e.from, ledger.get(e.from)! - e.amount);
    ledger.set(e.to, ledger.get(e.to)! + e.amount);
    let lostHere = false;
    for (const acc of [e.from, e.to]) {
      actual.set(acc, e.after[acc]!);
      if (e.after[acc] !== ledger.get(acc)) {
        lostHere = true;
        const prev = lastWriter.get(acc);
        bad(
          `transfer lost: ${e.id} (${e.from} → ${e.to}, ${e.amount}, tokens ${JSON.stringify(e.tokens)}) wrote ${acc} = ${e.after[acc]} from a read of ${e.read[acc]}, but the accepted transfers say ${ledger.get(acc)}` +
            (prev ? `: the write of ${prev.id} (entry ${prev.seq}, token ${prev.tokens[acc]}) that it overwrote is lost` : '') +
            ` (bank entry ${e.seq})`,
        );
        // go on from what the bank holds, so one loss is reported once
        ledger.set(acc, e.after[acc]!);
      }
      lastWriter.set(acc, e);
    }
    // (a transfer that moved money out of nowhere leaves an account off its ledger too)
    if (lostHere) r.lost++;
  }
  r.total = [...actual.values()].reduce((a, b) => a + b, 0);
  if (r.total !== r.openingTotal) bad(`transfer: money not conserved: the accounts hold ${r.total} at the end, they opened with ${r.openingTotal} (${[...actual].map(([a, b]) => `${a} ${b}`).join(', ')})`);
  // the history against the bank
  const accepted = new Set(log.filter((e) => e.accepted).map((e) => e.id));
  const sent = new Set<string>();
  for (const op of ops) {
    if (op.f !== 'transfer' || op.input.transfer_id === undefined) continue;
    const id = op.input.transfer_id;
    sent.add(id);
    if (op.type === 'ok' && !accepted.has(id)) r.violations.push(`transfer lost: ${op.id} transfer ${id} (${op.input.from} → ${op.input.to}, ${op.input.amount}) was answered ok but the bank never applied it`);
    if (op.type === 'fail' && accepted.has(id)) r.violations.push(`transfer: ${op.id} transfer ${id} was answered ${op.output.code ?? 'fail'} but the bank applied it`);
  }
  for (const id of accepted) if (!sent.has(id)) r.violations.push(`transfer: the bank applied ${id}, which no client sent`);
  return r;
}
