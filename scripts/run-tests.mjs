#!/usr/bin/env node
// Runs every compiled test file (dist/test/**/*.test.js) with node's own test runner, so
// that node's summary is the last thing `npm test` prints. Arguments filter by path
// substring: `npm test -- raft/ lock-fsm` runs only the files whose path contains one.
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { spawnSync } from 'node:child_process';

const root = new URL('..', import.meta.url).pathname;
const testDir = join(root, 'dist', 'test');

function walk(dir) {
  const out = [];
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...walk(p));
    else if (name.endsWith('.test.js')) out.push(p);
  }
  return out;
}

const filters = process.argv.slice(2);
const files = walk(testDir).filter((f) => filters.length === 0 || filters.some((s) => relative(root, f).includes(s)));
if (files.length === 0) {
  console.error(`no test files matched ${filters.join(' ') || '(all)'} under ${testDir}`);
  process.exit(1);
}
const res = spawnSync(process.execPath, ['--test', '--test-reporter=spec', ...files], { stdio: 'inherit' });
process.exit(res.status ?? 1);
