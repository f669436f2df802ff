// Checker 13, reused Idempotency-Keys (docs/api.md "Idempotency", docs/jepsen-lite.md
// "Checkers"): the workloads send, now and then, a different request under the key of an
// earlier one (a job id sent again with another lock or another body; input.reused_key).
// The contract's answer is 422 idempotency_key_reused, and nothing changes — which the
// linearizability checker holds the service to, the refusal being a definite "nothing
// applied" there. This checker holds the answer: a reused key answered ok (the first
// request's answer handed out for another request, e.g. another lock's grant) or with any
// other definite answer about the request is a violation. Outcomes that say nothing was
// decided (unknown, 503 unavailable, 429) prove nothing either way.
import { describeOp, type Op } from './history.js';

const UNDECIDED = new Set(['unavailable', 'too_many_requests', 'http_503', 'http_429']);

export function checkKeyReuse(ops: readonly Op[]): { sent: number; refused: number; violations: string[] } {
  const r = { sent: 0, refused: 0, violations: [] as string[] };
  for (const op of ops) {
    if (op.input.reused_key === undefined) continue;
    r.sent++;
    if (op.type === 'info') continue;
    if (op.type === 'fail' && op.output.code === 'idempotency_key_reused') {
      r.refused++;
      continue;
    }
    if (op.type === 'fail' && UNDECIDED.has(op.output.code ?? '')) continue;
    const what = op.type === 'ok' ? (op.output.token !== undefined ? `as a grant (token ${op.output.token})` : 'ok') : `${op.output.code ?? 'fail'}`;
    r.violations.push(`idempotency: a request under the key of another request (${op.input.reused_key.slice(0, 8)}…) was answered ${what}, not 422 idempotency_key_reused\n    ${describeOp(op)}`);
  }
  return r;
}
