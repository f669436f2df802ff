// The package entry point (package.json "exports"): the client SDK, which is its own
// package, @raftlock/client (packages/client). Re-exported whole, so that
// `import { RaftlockClient } from 'raftlock'` and '@raftlock/client' give the same classes.
export * from '@raftlock/client';
