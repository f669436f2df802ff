// A member's URLs as carried in a conf change's context (opaque to the Raft core): UTF-8
// JSON {"api","peer","promote"?}. Entries come from our own leaders, but a context that
// does not decode is ignored rather than trusted, so a bad entry never crashes a node.
// `promote: true` on an addLearner marks the learner for automatic promotion to voter once
// it has caught up (docs/membership.md); it is replicated state like the URLs. Older nodes
// read only api and peer, so the extra field is harmless to them.
import type { MemberAddress } from '../app/lock-app.js';

const enc = new TextEncoder();
const dec = new TextDecoder('utf-8', { fatal: true });

export function encodeAddressContext(m: MemberAddress, o: { promote?: boolean } = {}): Uint8Array {
  return enc.encode(JSON.stringify({ api: m.api, peer: m.peer, ...(o.promote ? { promote: true } : {}) }));
}
export const addressContext = encodeAddressContext;

/** the URLs and the promotion mark of a conf change's context, or null when it has none */
export function decodeMemberContext(id: string, ctx: Uint8Array | undefined): { address: MemberAddress; promote: boolean } | null {
  if (!ctx || ctx.length === 0) return null;
  try {
    const v = JSON.parse(dec.decode(ctx)) as { api?: unknown; peer?: unknown; promote?: unknown };
    if (typeof v.api === 'string' && typeof v.peer === 'string') return { address: { id, api: v.api, peer: v.peer }, promote: v.promote === true };
  } catch {
    /* not an address context */
  }
  return null;
}

export function decodeAddressContext(id: string, ctx: Uint8Array | undefined): MemberAddress | null {
  return decodeMemberContext(id, ctx)?.address ?? null;
}
