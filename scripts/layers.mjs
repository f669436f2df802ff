#!/usr/bin/env node
// The layers of src/ and packages/client/src, bottom first, and which layers each one may
// import (docs/architecture.md#layers). eslint.config.js turns this table into a
// no-restricted-imports rule per directory, so `npm run lint` (and `npm test`) fails on an
// import that runs back up. Run directly, this prints the import structure: every import
// from one layer into another, counted, with the ones the table forbids marked.
//
//   node scripts/layers.mjs          the structure; exit 1 when an import is forbidden or two
//                                    files import each other (mutualImports)
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
export const repoRoot = resolve(here, '..');

/**
 * `dirs` hold a layer's files (a directory belongs to the deepest layer that names it or a
 * parent of it); `files` name single-file layers. `mayImport` is the whole list: every
 * other layer is forbidden, sideways as well as upwards.
 */
export const layers = [
  // pure and deterministic (purity is a separate lint block in eslint.config.js); the
  // assertion module is the one thing the core and the lock FSM share
  { name: 'assert', files: ['src/assert.ts'], mayImport: [] },
  { name: 'raft/core', dirs: ['src/raft/core'], mayImport: ['assert'] },
  // the SDK is a leaf: the state machine takes only MAX_DURATION_MS from it, out of
  // @raftlock/client/duration, a module without imports (so purity holds)
  { name: 'lock-fsm', dirs: ['src/lock-fsm'], mayImport: ['assert', 'client'] },
  // the one wording of zod failures (cluster file, REST input, tokens.json, backups)
  { name: 'zod-error', files: ['src/zod-error.ts'], mayImport: [] },
  // leaves with I/O: configuration, metrics registry, backup file format and version;
  // config takes the duration grammar from the SDK (@raftlock/client/duration)
  { name: 'config', files: ['src/config.ts'], mayImport: ['zod-error', 'client'] },
  { name: 'metrics', files: ['src/metrics.ts'], mayImport: [] },
  // the ops room's leaves: the backup file format and the version (read by the API, the CLI
  // and the ops room above the API)
  { name: 'server/ops/format', dirs: ['src/server/ops/format'], mayImport: ['zod-error'] },
  // the driver's seams in one file (Transport, DurableStorage, Application, DriverClock,
  // RawNodeLike, Rng), right above the core: the storages, the driver and the transports
  // that implement them all import them from here
  { name: 'raft/seams', files: ['src/raft/seams.ts'], mayImport: ['raft/core'] },
  // the driver's durable log (implements DurableStorage)
  { name: 'raft/storage', dirs: ['src/raft/storage'], mayImport: ['assert', 'raft/core', 'raft/seams'] },
  { name: 'raft', dirs: ['src/raft'], mayImport: ['assert', 'raft/core', 'raft/seams', 'raft/storage'] },
  // implements the seams' Transport (and traces through the driver's trace.ts)
  { name: 'transport', dirs: ['src/transport'], mayImport: ['raft/core', 'raft/seams', 'raft'] },
  // the REST surface, the service interfaces (ports) src/server implements, and the edge
  // that maps the state machine's results to API errors and views (result-errors, lock-views)
  // (and the SDK's NOT_SENT_CODES, so the relay and the SDK call the same errors "not sent")
  // a refusal in the contract's terms (code, message, details) without HTTP: what the node's
  // services fail with (docs/contract.md §3 "Errors")
  { name: 'api/failure', files: ['src/api/failure.ts'], mayImport: [] },
  // the HTTP edge's error catalog: status, body, Retry-After. Only the API and security
  // answer HTTP; src/server's rooms may not import it (they fail with api/failure)
  { name: 'api/errors', files: ['src/api/errors.ts'], mayImport: ['api/failure'] },
  { name: 'api', dirs: ['src/api'], mayImport: ['lock-fsm', 'metrics', 'server/ops/format', 'zod-error', 'client', 'api/failure', 'api/errors'] },
  { name: 'security', dirs: ['src/security'], mayImport: ['api', 'api/failure', 'api/errors', 'transport', 'lock-fsm', 'config', 'zod-error'] },
  // src/server: one raftlock node, in rooms, each importing only rooms below it.
  // app: the driver's Application (the lock FSM behind the log) and its command codec
  { name: 'server/app', dirs: ['src/server/app'], mayImport: ['assert', 'raft/core', 'raft/seams', 'raft', 'lock-fsm', 'config'] },
  // membership: joins, reconfiguration, peer addresses, amnesia check, readiness
  { name: 'server/membership', dirs: ['src/server/membership'], mayImport: ['raft/core', 'raft/seams', 'raft', 'api', 'api/failure', 'server/app'] },
  // watch: the feed of lock events (hub, ring, event mapping); the SDK defines the wire types
  { name: 'server/watch', dirs: ['src/server/watch'], mayImport: ['lock-fsm', 'api', 'api/failure', 'client'] },
  // ops: status observations, contention, backup, restore
  {
    name: 'server/ops', dirs: ['src/server/ops'],
    mayImport: ['raft/core', 'raft/storage', 'raft/seams', 'raft', 'lock-fsm', 'config', 'api', 'api/failure', 'server/ops/format', 'server/app'],
  },
  // leader: the leader's way into the log, its leases, waits, hold timers and log clock
  {
    name: 'server/leader', dirs: ['src/server/leader'],
    mayImport: ['raft/seams', 'raft', 'lock-fsm', 'metrics', 'config', 'api', 'api/failure', 'server/app', 'server/membership'],
  },
  // services: the API's LockService on top of the leader room
  { name: 'server/services', dirs: ['src/server/services'], mayImport: ['assert', 'lock-fsm', 'api', 'api/failure', 'server/app', 'server/membership', 'server/leader'] },
  // composition: compose.ts wires driver, storage, transport, state machine, API, security
  // and the rooms above into one node
  {
    name: 'server', dirs: ['src/server'],
    mayImport: ['raft/core', 'lock-fsm', 'zod-error', 'config', 'metrics', 'raft/storage', 'raft/seams', 'raft', 'transport', 'api', 'api/failure', 'security', 'client',
      'server/ops/format', 'server/app', 'server/membership', 'server/watch', 'server/ops', 'server/leader', 'server/services'],
  },
  {
    name: 'cli', dirs: ['src/cli'],
    mayImport: ['raft/core', 'lock-fsm', 'zod-error', 'config', 'metrics', 'raft/storage', 'raft/seams', 'raft', 'transport', 'api', 'api/failure', 'api/errors', 'security', 'client',
      'server/ops/format', 'server/app', 'server/membership', 'server/ops', 'server'],
  },
  // the package's entry point re-exports the SDK only
  { name: 'index', files: ['src/index.ts'], mayImport: ['client'] },
  // the SDK (@raftlock/client) imports no server code
  { name: 'client', dirs: ['packages/client/src'], mayImport: [], packageName: '@raftlock/client' },
];

const byName = new Map(layers.map((l) => [l.name, l]));
for (const l of layers) {
  for (const m of l.mayImport) if (!byName.has(m)) throw new Error(`layers: ${l.name} may import unknown layer ${m}`);
}

const posix = (p) => p.split(sep).join('/');

/** the layer of a repository-relative path (posix), or undefined outside the table */
export function layerOf(path) {
  let best;
  let bestLen = -1;
  for (const l of layers) {
    for (const f of l.files ?? []) if (path === f) return l;
    for (const d of l.dirs ?? []) {
      if ((path === d || path.startsWith(d + '/')) && d.length > bestLen) {
        best = l;
        bestLen = d.length;
      }
    }
  }
  return best;
}

function walk(dir, out) {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p, out);
    else if (p.endsWith('.ts') && !p.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

/** every source file the table covers, repository-relative */
export function sourceFiles(root = repoRoot) {
  const out = [];
  for (const top of ['src', 'packages/client/src']) walk(join(root, top), out);
  return out.map((p) => posix(relative(root, p))).sort();
}

/** directories holding source files (for one lint block per directory) */
export function sourceDirs(root = repoRoot) {
  return [...new Set(sourceFiles(root).map((f) => posix(dirname(f))))].sort();
}

const importRe = /(?:^|[\s;])(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|(?:^|[\s;(=])import\s*\(\s*['"]([^'"]+)['"]\s*\)|(?:^|[\s;])import\s*['"]([^'"]+)['"]/gm;

/** the specifiers a file imports (static, re-exports, side-effect and dynamic imports) */
export function importsOf(text) {
  // a TS import type (`import('node:http').X` in a type position) is caught too; it names
  // a module like any import, so it counts
  const out = [];
  for (const m of text.matchAll(importRe)) out.push(m[1] ?? m[2] ?? m[3]);
  return out;
}

/** the layer a specifier in `file` points at, or undefined (node:, npm packages) */
export function targetLayer(file, spec) {
  if (spec.startsWith('.')) return layerOf(posix(join(dirname(file), spec)).replace(/\.js$/, '.ts'));
  for (const l of layers) if (l.packageName && (spec === l.packageName || spec.startsWith(l.packageName + '/'))) return l;
  if (spec === 'raftlock' || spec.startsWith('raftlock/')) return byName.get('index');
  return undefined;
}

/** every import from one layer into another: "from → to" → { count, allowed, examples } */
export function crossLayerImports(root = repoRoot) {
  const edges = new Map();
  for (const file of sourceFiles(root)) {
    const from = layerOf(file);
    if (!from) continue;
    for (const spec of importsOf(readFileSync(join(root, file), 'utf8'))) {
      const to = targetLayer(file, spec);
      if (!to || to === from) continue;
      const key = `${from.name} → ${to.name}`;
      const e = edges.get(key) ?? { from: from.name, to: to.name, count: 0, allowed: from.mayImport.includes(to.name), examples: [] };
      e.count++;
      if (!e.allowed) e.examples.push(`${file}: '${spec}'`);
      edges.set(key, e);
    }
  }
  return [...edges.values()].sort((a, b) => layers.indexOf(byName.get(a.from)) - layers.indexOf(byName.get(b.from)) || a.to.localeCompare(b.to));
}

/**
 * Pairs of files that import each other (a type import counts: it ties the two files just
 * as much). Such a pair is one module in two files, and makes module order matter. Each
 * pair left here is a debt, named with why it is still there; any other pair fails.
 */
/** @type {Set<string>} none left */
export const knownMutualPairs = new Set();

/** every pair of source files that import each other, as "a ↔ b" (a < b) */
export function mutualImports(root = repoRoot) {
  const deps = new Map();
  for (const file of sourceFiles(root)) {
    const to = new Set();
    for (const spec of importsOf(readFileSync(join(root, file), 'utf8'))) {
      if (spec.startsWith('.')) to.add(posix(join(dirname(file), spec)).replace(/\.js$/, '.ts'));
    }
    deps.set(file, to);
  }
  const pairs = [];
  for (const [a, to] of deps) for (const b of to) if (a < b && deps.get(b)?.has(a)) pairs.push(`${a} ↔ ${b}`);
  return pairs.sort();
}

function main() {
  const edges = crossLayerImports();
  const orphans = sourceFiles().filter((f) => !layerOf(f));
  let bad = orphans.length;
  for (const f of orphans) console.log(`no layer for ${f}: add it to the table in scripts/layers.mjs`);
  console.log('layers, bottom first (a layer may import only those in its list):');
  for (const l of layers) console.log(`  ${l.name.padEnd(18)} ← ${l.mayImport.length ? l.mayImport.join(', ') : '(nothing in src)'}`);
  console.log('\nimports between layers (from → to: count):');
  for (const e of edges) {
    console.log(`  ${e.allowed ? '  ' : '✗ '}${`${e.from} → ${e.to}`.padEnd(36)} ${String(e.count).padStart(3)}${e.allowed ? '' : '  FORBIDDEN'}`);
    if (!e.allowed) {
      bad += e.count;
      for (const x of e.examples) console.log(`        ${x}`);
    }
  }
  const pairs = mutualImports();
  console.log('\nfiles that import each other:');
  for (const p of pairs) console.log(`  ${knownMutualPairs.has(p) ? '  ' : '✗ '}${p}${knownMutualPairs.has(p) ? '  (known: scripts/layers.mjs knownMutualPairs)' : '  FORBIDDEN'}`);
  if (pairs.length === 0) console.log('  none');
  bad += pairs.filter((p) => !knownMutualPairs.has(p)).length;
  console.log(bad ? `\n${bad} forbidden import(s), file pair(s) or file(s) outside the table` : '\nno forbidden imports');
  process.exitCode = bad ? 1 : 0;
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) main();
