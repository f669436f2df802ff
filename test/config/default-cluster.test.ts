// `raftlock cluster` in a directory without a cluster file writes the local 3-node one
// (src/cli/default-cluster.ts): the same as the repository's cluster.config.json, valid,
// and never over an existing file.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_CLUSTER_FILE, writeDefaultClusterFile } from '../../src/cli/default-cluster.js';
import { loadConfig } from '../../src/config.js';
import { repoRoot } from '../support/cluster-harness.js';

describe('default cluster file', () => {
  it("is the repository's cluster.config.json (what `npm start` runs)", () => {
    assert.deepEqual(DEFAULT_CLUSTER_FILE, JSON.parse(readFileSync(join(repoRoot, 'cluster.config.json'), 'utf8')));
  });

  it('is written once where none exists, loads, and never replaces an existing file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'raftlock-default-cluster-'));
    try {
      const file = join(dir, 'cluster.config.json');
      assert.equal(writeDefaultClusterFile(file), true);
      const config = loadConfig(file);
      assert.deepEqual(config.nodes.map((n) => n.api), ['http://127.0.0.1:7001', 'http://127.0.0.1:7002', 'http://127.0.0.1:7003']);
      assert.equal(config.dataDir, join(dir, 'data'));
      writeFileSync(file, '{"mine": true}');
      assert.equal(writeDefaultClusterFile(file), false);
      assert.equal(readFileSync(file, 'utf8'), '{"mine": true}');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
