// The logs the fenced resource writes (test/jepsen-lite/resource-proc.ts), as the history
// checkers read them: the register's reads and writes (resource.jsonl), the access-logged
// resource's begins and ends (access.jsonl) and the bank's transfers (bank.jsonl). Each
// log's own order is the resource's linearization of what it accepted.

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
  /** who wrote, when the client says (the election workload: the leader's session), so
   *  the election checker can tell two leaders under one token apart */
  writer?: string;
}

/** One begin or end at the access-logged resource. */
export interface AccessLogEntry {
  seq: number;
  t: number;
  phase: 'begin' | 'end';
  /** a shared-lock name (js-…) or a semaphore name (jm-…) */
  name: string;
  token: number;
  /** shared locks: read (a shared holder) or write (an exclusive one) */
  mode?: 'read' | 'write';
  /** semaphores: the permits the holder has */
  permits?: number;
  /** the fencing verdict (always true for semaphores, and with fencing off) */
  accepted: boolean;
  /** highest token of a write / of any access begun on the name before this entry */
  highestWrite: number;
  highestAny: number;
  /** after this entry: accesses (shared locks) or permits (semaphores) in progress on the
   *  name, as the resource sees them — stale holders included */
  active: number;
}

/** One transfer at the bank (the transfer workload). */
export interface BankLogEntry {
  seq: number;
  t: number;
  /** the client's transfer id (unique per attempt: a second entry with it is a duplicate) */
  id: string;
  from: string;
  to: string;
  amount: number;
  /** the tokens the client wrote with, per account */
  tokens: Record<string, number>;
  /** the balances the client read (and computed its writes from) */
  read: Record<string, number>;
  accepted: boolean;
  /** highest token each account had seen before, its balance before and after */
  highest: Record<string, number>;
  before: Record<string, number>;
  after: Record<string, number>;
}
