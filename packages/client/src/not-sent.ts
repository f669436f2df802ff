// Which connection errors prove that a request never left: the SDK's retry rule (a call
// that was not sent is retried on another endpoint, docs/client.md) and the server's
// follower-to-leader relay (nothing was applied: 503, not 504; docs/api.md) decide on
// the same list, exported to the server through @raftlock/client/internal.

/** Error codes raised before any byte of the request could reach the other side. */
export const NOT_SENT_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL',
  'UND_ERR_CONNECT_TIMEOUT', 'ERR_TLS_CERT_ALTNAME_INVALID', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'DEPTH_ZERO_SELF_SIGNED_CERT', 'CERT_HAS_EXPIRED', 'SELF_SIGNED_CERT_IN_CHAIN',
]);
