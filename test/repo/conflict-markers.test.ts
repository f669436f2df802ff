// A merge that leaves conflict markers in a tracked file must fail npm test: markers once
// reached README.md and docs/ on main unnoticed, because nothing reads those files.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

const MARKER = /^(<{7}|>{7}) |^={7}$/m;

test('no tracked file holds a merge conflict marker', () => {
  const files = execFileSync('git', ['ls-files', '-z'], { encoding: 'utf8' }).split('\0').filter(Boolean);
  const hits: string[] = [];
  for (const f of files) {
    if (!/\.(md|ts|mts|mjs|js|json|go|py|sh|yml|yaml|toml|html|css)$/.test(f)) continue;
    let text: string;
    try { text = readFileSync(f, 'utf8'); } catch { continue; }
    const lines = text.split('\n');
    lines.forEach((line, i) => { if (MARKER.test(line)) hits.push(`${f}:${i + 1}: ${line}`); });
  }
  assert.deepEqual(hits, [], `conflict markers left by a merge:\n${hits.join('\n')}`);
});
