// The election checker of the lock simulation (docs/simulation-lock.md "Elections"). An
// election is the lock of its name whose grant carries a value (docs/lock-fsm.md
// "Elections"), so the lock checkers already see its grants (mutual exclusion, FIFO,
// tokens). This adds what is the election's own, checked two ways:
//  - a shadow over the applied stream (the first applier of each index): per election its
//    leader (the session and token of the last `granted` with a value, until a resign, a
//    release, or the session's end frees it) and, per leader token, the value history
//    (index → value) of its grant and proclaims. A campaign won while another leader
//    stands, or a proclaim / resign by anyone but the standing leader, fails: one leader
//    per election at every applied index;
//  - every node's state after each apply: each leader's token won in the stream, and its
//    value is the last one the stream gave that token at or before the node's index (the
//    value is the last proclaimed, on every replica, at every index).
import type { ApplyOutput, Command, LockFsm } from '../../../src/lock-fsm/index.js';
import type { ModeViolation } from './mode-checkers.js';

interface Leader { sid: string; token: number }

export class ElectionShadow {
  private readonly leaders = new Map<string, Leader>();
  /** leader token → [index, value] in index order */
  private readonly values = new Map<number, [number, string][]>();
  readonly counts = { electionsWon: 0, proclaims: 0, resigns: 0, electionChecks: 0 };

  constructor(private readonly fail: ModeViolation) {}

  /** the first apply anywhere of `index` (cmd: the decoded command, absent on a replay) */
  onApplied(index: number, cmd: Command | undefined, out: ApplyOutput): void {
    const r = out.result;
    if (cmd && r.ok && r.kind === 'released' && cmd.kind === 'release') this.free(cmd.name, cmd.sessionId);
    if (r.ok && r.kind === 'session_closed') for (const name of r.released) this.free(name, r.sessionId);
    for (const e of out.events) {
      switch (e.type) {
        case 'granted': {
          const cur = this.leaders.get(e.name);
          if (e.value === undefined) {
            if (cur !== undefined) this.fail('OneLeader', `${e.name} granted (plain) to ${e.sessionId} at ${index} while ${cur.sid} (token ${cur.token}) leads it`);
            break;
          }
          if (cur !== undefined) this.fail('OneLeader', `election ${e.name} won by ${e.sessionId} (token ${e.fencingToken}) at ${index} while ${cur.sid} (token ${cur.token}) leads it`);
          this.leaders.set(e.name, { sid: e.sessionId, token: e.fencingToken });
          this.values.set(e.fencingToken, [[index, e.value]]);
          this.counts.electionsWon++;
          break;
        }
        case 'proclaimed': {
          const cur = this.leaders.get(e.name);
          if (cur === undefined || cur.sid !== e.sessionId || cur.token !== e.fencingToken) this.fail('OneLeader', `election ${e.name}: ${e.sessionId} (token ${e.fencingToken}) proclaimed at ${index}, but the leader is ${cur ? `${cur.sid} (token ${cur.token})` : 'nobody'}`);
          this.values.get(e.fencingToken)!.push([index, e.value]);
          this.counts.proclaims++;
          break;
        }
        case 'resigned': {
          const cur = this.leaders.get(e.name);
          if (cur === undefined || cur.sid !== e.sessionId || cur.token !== e.fencingToken) this.fail('OneLeader', `election ${e.name}: ${e.sessionId} resigned at ${index}, but the leader is ${cur ? cur.sid : 'nobody'}`);
          this.leaders.delete(e.name);
          this.counts.resigns++;
          break;
        }
        case 'sessionEnded':
          for (const name of e.released) this.free(name, e.sessionId);
          break;
        // a revoke or a max hold frees the leader's lock (docs/lock-fsm.md "Elections")
        case 'revoked':
        case 'grantExpired':
          if (e.kind === 'lock') this.free(e.name, e.sessionId);
          break;
        default:
      }
    }
  }

  /** a node's state after it applied `index`: each leader's value is the stream's last for its token */
  checkNode(fsm: LockFsm, index: number, where: string): void {
    for (const l of fsm.core.locks.values()) {
      if (l.value === null) continue;
      this.counts.electionChecks++;
      const h = this.values.get(l.token);
      if (h === undefined || l.holder === null) {
        this.fail('OneLeader', `${where}: election ${l.name} led by ${l.holder?.id ?? 'nobody'} with token ${l.token}, which won no election in the applied stream`);
      }
      let want: string | undefined;
      for (const [i, v] of h) if (i <= index) want = v;
      if (want !== l.value) this.fail('LeaderValue', `${where}: election ${l.name} (token ${l.token}) has value ${JSON.stringify(l.value).slice(0, 60)}, the stream's last at or before ${index} is ${JSON.stringify(want).slice(0, 60)}`);
    }
  }

  /** a release or the session's end freed `name` (a no-op unless `sid` leads it) */
  private free(name: string, sid: string): void {
    const cur = this.leaders.get(name);
    if (cur?.sid === sid) this.leaders.delete(name);
  }
}
