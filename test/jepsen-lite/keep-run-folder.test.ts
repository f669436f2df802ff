// A failing jepsen-lite run keeps its folder (support.ts): a run with a violation, or
// whose histories were not shown linearizable ('unknown' included), is copied under the
// kept-runs folder before the test's temp folder is removed; a clean run is not.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { keepRunFolder, worthKeeping } from './support.js';

test('which runs are kept: a violation, or histories not shown linearizable', () => {
  assert.equal(worthKeeping({ violations: [], linearizable: true }), false);
  assert.equal(worthKeeping({ violations: ['shared lock: two holders'], linearizable: true }), true);
  assert.equal(worthKeeping({ violations: [], linearizable: false }), true);
  assert.equal(worthKeeping({ violations: [], linearizable: 'unknown' }), true);
});

test('a kept run folder is a full copy under the kept-runs folder, named after the temp folder', () => {
  const root = mkdtempSync(join(tmpdir(), 'raftlock-keep-test-'));
  try {
    const outDir = join(root, 'raftlock-jepsen-abc123');
    mkdirSync(join(outDir, 'run-1', 'data'), { recursive: true });
    writeFileSync(join(outDir, 'run-1', 'history.jsonl'), '{"id":"c1:1"}\n');
    writeFileSync(join(outDir, 'run-1', 'data', 'n1.log'), 'log line\n');
    const kept = join(root, 'jepsen-runs');
    const dest = keepRunFolder(outDir, kept);
    assert.equal(dest, join(kept, `failed-${basename(outDir)}`));
    assert.equal(readFileSync(join(dest, 'run-1', 'history.jsonl'), 'utf8'), '{"id":"c1:1"}\n');
    assert.equal(readFileSync(join(dest, 'run-1', 'data', 'n1.log'), 'utf8'), 'log line\n');
    rmSync(outDir, { recursive: true, force: true });
    assert.ok(existsSync(join(dest, 'run-1', 'history.jsonl')), 'the copy outlives the temp folder');
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
