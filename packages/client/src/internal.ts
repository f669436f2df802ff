// Pieces of the SDK that the `raftlock` command and raftlock's tests use directly
// (@raftlock/client/internal). Not a stable API: anything here may change in any release.
export { HttpCaller } from './http.js';
export type { Answer, CallSpec } from './http.js';
export { EndpointSet, normalizeEndpoint, parseRetryAfter } from './endpoints.js';
export { decodeCluster } from './wire.js';
export { NOT_SENT_CODES } from './not-sent.js';
export { sseFields } from './watch.js';
