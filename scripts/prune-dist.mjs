#!/usr/bin/env node
// Before `npm pack`: removes compiled files whose source is gone (a file moved or deleted
// since the last build leaves its old .js/.d.ts behind, and `files` would ship them).
// Usage: node scripts/prune-dist.mjs OUT_DIR SRC_DIR [OUT_DIR SRC_DIR …], e.g. dist/src src.
import { existsSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const pairs = process.argv.slice(2);
if (pairs.length === 0 || pairs.length % 2 !== 0) {
  console.error('usage: prune-dist.mjs OUT_DIR SRC_DIR [OUT_DIR SRC_DIR …]');
  process.exit(2);
}
const OUTPUT = /(\.d\.ts\.map|\.js\.map|\.d\.ts|\.js)$/;

function walk(dir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? walk(p) : [p];
  });
}

let removed = 0;
for (let i = 0; i < pairs.length; i += 2) {
  const [out, src] = [pairs[i], pairs[i + 1]];
  for (const file of walk(out)) {
    const rel = relative(out, file);
    if (!OUTPUT.test(rel)) continue;
    if (existsSync(join(src, rel.replace(OUTPUT, '.ts')))) continue;
    rmSync(file);
    removed++;
  }
}
/** removes directories left empty, bottom-up */
function pruneEmpty(dir) {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) return;
  for (const name of readdirSync(dir)) pruneEmpty(join(dir, name));
  if (readdirSync(dir).length === 0) rmSync(dir, { recursive: true });
}
for (let i = 0; i < pairs.length; i += 2) for (const name of existsSync(pairs[i]) ? readdirSync(pairs[i]) : []) pruneEmpty(join(pairs[i], name));
if (removed > 0) console.log(`prune-dist: removed ${removed} compiled file(s) without a source`);
