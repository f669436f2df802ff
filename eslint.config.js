// ESLint flat config. The rules that matter most: src/raft/core and src/lock-fsm are pure
// (no I/O imports, no clocks, timers, randomness or process access; time and randomness
// arrive as inputs), and no import runs back up the layers (docs/architecture.md#layers).
import { posix } from 'node:path';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { layerOf, layers, sourceDirs, sourceFiles } from './scripts/layers.mjs';

const impureModules = [
  'node:*', 'fs', 'fs/*', 'net', 'http', 'https', 'http2', 'dgram', 'child_process', 'os', 'path',
  'crypto', 'timers', 'timers/*', 'worker_threads', 'level', 'classic-level', 'msgpackr', 'fastify',
  'undici', 'pino', 'prom-client', 'commander',
];

const pureLayers = new Set(['raft/core', 'lock-fsm']);
const pureImports = impureModules.map((group) => ({ group: [group], message: 'the Raft core and the lock FSM are pure: no I/O (docs/architecture.md#layers)' }));

const escapeRe = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const relFrom = (dir, to) => {
  const r = posix.relative(dir, to);
  return r.startsWith('..') ? r : `./${r}`;
};

/**
 * One no-restricted-imports block per directory and layer, from the table in
 * scripts/layers.mjs: a file may import only the layers its own layer lists. The patterns
 * are the import specifiers that reach a forbidden layer from that directory (a relative
 * path is spelled from where the file is). Dynamic import() is not checked by the rule;
 * `node scripts/layers.mjs` checks it.
 */
function layerBlocks() {
  const dirs = sourceDirs();
  const files = sourceFiles();
  const orphans = files.filter((f) => !layerOf(f));
  if (orphans.length > 0) throw new Error(`no layer for ${orphans.join(', ')}: add it to scripts/layers.mjs`);
  const dirsOf = (layer) => dirs.filter((d) => layerOf(`${d}/x.ts`) === layer);
  const groups = new Map();
  for (const f of files) {
    const key = `${posix.dirname(f)}|${layerOf(f).name}`;
    groups.set(key, [...(groups.get(key) ?? []), f]);
  }
  const blocks = [];
  for (const [key, groupFiles] of groups) {
    const [dir, name] = key.split('|');
    const layer = layers.find((l) => l.name === name);
    const patterns = [];
    for (const target of layers) {
      if (target === layer || layer.mayImport.includes(target.name)) continue;
      const res = [
        // a directory's files, except those that are single-file layers of their own
        // (src/raft/seams.ts inside src/raft)
        ...dirsOf(target).map((d) => {
          const own = layers.flatMap((l) => (l === target ? [] : (l.files ?? []))).filter((f) => posix.dirname(f) === d);
          const except = own.length === 0 ? '' : `(?!(${own.map((f) => escapeRe(posix.basename(f).replace(/\.ts$/, '.js'))).join('|')})$)`;
          return `${escapeRe(relFrom(dir, d).replace(/\/$/, ''))}/${except}[^/]+`;
        }),
        ...(target.files ?? []).map((f) => escapeRe(relFrom(dir, f.replace(/\.ts$/, '.js')))),
        ...(target.packageName ? [`${escapeRe(target.packageName)}(/.*)?`] : []),
        ...(target.name === 'index' ? ['raftlock(/.*)?'] : []),
      ];
      if (res.length === 0) continue;
      patterns.push({
        regex: `^(${res.join('|')})$`,
        caseSensitive: true,
        message: `${layer.name} may not import ${target.name}: ${layer.mayImport.length ? `it may import ${layer.mayImport.join(', ')}` : 'it imports no other layer'} (scripts/layers.mjs, docs/architecture.md#layers)`,
      });
    }
    if (pureLayers.has(layer.name)) patterns.push(...pureImports);
    if (patterns.length > 0) blocks.push({ files: groupFiles, rules: { 'no-restricted-imports': ['error', { patterns }] } });
  }
  return blocks;
}

export default tseslint.config(
  { ignores: ['dist/**', 'packages/*/dist/**', 'node_modules/**', 'data/**', 'test-output/**', 'jepsen-runs/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { console: 'readonly', process: 'readonly', Buffer: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', setInterval: 'readonly', clearInterval: 'readonly', setImmediate: 'readonly', URL: 'readonly', TextEncoder: 'readonly', TextDecoder: 'readonly', AbortController: 'readonly', AbortSignal: 'readonly', queueMicrotask: 'readonly' } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_' }],
      '@typescript-eslint/no-explicit-any': 'error',
      'no-constant-condition': ['error', { checkLoops: false }],
    },
  },
  {
    files: ['src/raft/core/**/*.ts', 'src/lock-fsm/**/*.ts', 'src/assert.ts'],
    rules: {
      // no-restricted-imports for these files is in layerBlocks (one rule per file: a second
      // block would replace the first's patterns)
      'no-restricted-globals': ['error',
        { name: 'Date', message: 'time arrives as ticks or inside commands' },
        { name: 'setTimeout', message: 'timers belong to the driver' },
        { name: 'setInterval', message: 'timers belong to the driver' },
        { name: 'setImmediate', message: 'timers belong to the driver' },
        { name: 'process', message: 'no process access in pure code' },
        { name: 'performance', message: 'time arrives as ticks or inside commands' },
        { name: 'crypto', message: 'randomness comes from an injected Rng' },
        { name: 'Buffer', message: 'use Uint8Array in pure code' },
        { name: 'require', message: 'ES modules only' },
      ],
      'no-restricted-properties': ['error', { object: 'Math', property: 'random', message: 'randomness comes from an injected Rng' }],
    },
  },
  ...layerBlocks(),
  {
    // Two object-literal forms that cost the garbage collector on every call.
    // Node 20's V8 gives an object made by a leading spread and then given a property the
    // source lacks ({ ...h, type }) a new hidden class on every call once the code is
    // optimized, made in the old generation: decoding a peer message went from 1.5 to 11 µs
    // and left ~400 B behind per message (BENCHMARKS.md "Tenth round"). Named fields first
    // and spreads after ({ type, ...h }), Object.assign, or the fields written out are
    // all fine.
    files: ['src/**/*.ts'],
    rules: {
      'no-restricted-syntax': ['error', {
        selector: 'ObjectExpression > SpreadElement:first-child ~ Property',
        message: 'a spread before named fields costs a hidden class per call on Node 20: put the spread after the fields, or use Object.assign({}, a, { … }) (BENCHMARKS.md "Tenth round")',
      }, {
        // V8 makes a literal's accessor pair in the old generation, and a dead pair kept
        // its closure's whole request alive through every scavenge (routes/context.ts
        // LeaderRequestContext): accessors belong on a class, where they are made once
        selector: 'ObjectExpression > Property[kind=/^(get|set)$/]',
        message: 'an accessor in an object literal is made in the old generation on every evaluation and keeps what its closure holds alive past scavenges: use a class (BENCHMARKS.md "Tenth round")',
      }],
    },
  },
  {
    // the one checker library (docs/simulation.md "Checkers"): the simulators and jepsen-lite
    // both import it, so it imports neither harness
    files: ['test/checkers/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [{
          regex: '(^|/)(jepsen-lite|sim)/',
          message: 'the checker library imports no harness (test/sim, test/jepsen-lite): move what both need into test/checkers or test/model',
        }],
      }],
    },
  },
);
