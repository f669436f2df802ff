// ESLint flat config. The one rule that matters most: src/raft/core and src/lock-fsm
// are pure (architecture rule 1). No I/O imports, no clocks, timers, randomness or
// process access there; time and randomness arrive as inputs.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const impureModules = [
  'node:*', 'fs', 'fs/*', 'net', 'http', 'https', 'http2', 'dgram', 'child_process', 'os', 'path',
  'crypto', 'timers', 'timers/*', 'worker_threads', 'level', 'classic-level', 'msgpackr', 'fastify',
  'undici', 'pino', 'prom-client', 'commander',
];

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
    files: ['src/raft/core/**/*.ts', 'src/lock-fsm/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: impureModules.map((group) => ({ group: [group], message: 'the Raft core and the lock FSM are pure: no I/O (architecture rule 1)' })) }],
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
);
