// A member's URLs as carried in a conf change's context (opaque to the Raft core): UTF-8
// JSON {"api","peer"}. Entries come from our own leaders, but a context that does not
// decode is ignored rather than trusted, so a bad entry never crashes a node.
import type { MemberAddress } from './lock-app.js';

const enc = new TextEncoder();
const dec = new TextDecoder('utf-8', { fatal: true });

export function encodeAddressContext(m: MemberAddress): Uint8Array {
  return enc.encode(JSON.stringify({ api: m.api, peer: m.peer }));
}
export const addressContext = encodeAddressContext;

export function decodeAddressContext(id: string, ctx: Uint8Array | undefined): MemberAddress | null {
  if (!ctx || ctx.length === 0) return null;
  try {
    const v = JSON.parse(dec.decode(ctx)) as { api?: unknown; peer?: unknown };
    if (typeof v.api === 'string' && typeof v.peer === 'string') return { id, api: v.api, peer: v.peer };
  } catch {
    /* not an address context */
  }
  return null;
}
