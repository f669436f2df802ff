// Golden interaction transcripts (after etcd-io/raft interaction_test.go + rafttest): each
// test/raft/testdata/*.txt holds commands; the output under each command is what the
// cluster did, rendered by describe.ts. Rewrite with UPDATE_GOLDEN=1, then review the diff.
//
// Commands: nodes N [preVote] [checkQuorum] | campaign ID | propose ID DATA | stabilize |
//   tick ID [K] | isolate ID | recover | status ID | read-index ID CTX | transfer ID TO |
//   conf ID addVoter|addLearner|removeNode NODE | process-ready ID | deliver [TO]
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Network, enc } from './harness.js';
import type { ConfChangeType } from '../../src/raft/core/types.js';

// compiled tests run from dist/test/raft; the golden files stay in the source tree
const here = fileURLToPath(new URL('.', import.meta.url));
const dir = join(here.includes('/dist/') ? here.replace('/dist/', '/') : here, 'testdata');

function run(script: string): string {
  const out: string[] = [];
  let net: Network | null = null;
  const need = (): Network => {
    if (!net) throw new Error('run "nodes N" first');
    return net;
  };
  for (const raw of script.split('\n')) {
    if (raw.startsWith('  ') || raw.trim() === '') continue; // previous output / blank
    out.push(raw);
    if (raw.startsWith('#')) continue;
    const [cmd, ...args] = raw.trim().split(/\s+/);
    const lines: string[] = [];
    const record = (f: () => void): void => {
      const n = need();
      n.transcript = lines;
      f();
      n.transcript = null;
    };
    switch (cmd) {
      case 'nodes':
        net = Network.create(Number(args[0]), { preVote: args.includes('preVote'), checkQuorum: args.includes('checkQuorum') });
        break;
      case 'campaign':
        need().node(args[0]!).raw.campaign();
        break;
      case 'propose':
        lines.push(`  ${JSON.stringify(need().node(args[0]!).raw.propose(enc(args[1] ?? '')))}`);
        break;
      case 'stabilize':
        record(() => need().stabilize());
        break;
      case 'tick':
        need().tick(args[0]!, Number(args[1] ?? 1));
        break;
      case 'isolate':
        need().isolate(args[0]!);
        break;
      case 'recover':
        need().recover();
        break;
      case 'status': {
        const s = need().node(args[0]!).raw.status();
        lines.push(`  ${s.id} ${s.role} term=${s.term} vote=${s.vote ?? '-'} leader=${s.leader ?? '-'} commit=${s.commit} applied=${s.applied} last=${s.lastIndex} voters=[${s.conf.voters}] learners=[${s.conf.learners}]`);
        break;
      }
      case 'read-index':
        lines.push(`  ${need().node(args[0]!).raw.readIndex(Number(args[1]))}`);
        break;
      case 'transfer':
        lines.push(`  ${need().node(args[0]!).raw.transferLeadership(args[1]!)}`);
        break;
      case 'conf':
        lines.push(`  ${JSON.stringify(need().node(args[0]!).raw.proposeConfChange({ type: args[1] as ConfChangeType, nodeId: args[2]! }))}`);
        break;
      case 'process-ready':
        record(() => need().handleReady(args[0]!));
        break;
      case 'deliver':
        record(() => need().deliver(args[0] ? (m) => m.to === args[0] : undefined));
        break;
      default:
        throw new Error(`unknown command: ${raw}`);
    }
    out.push(...lines);
  }
  return out.join('\n') + '\n';
}

for (const file of readdirSync(dir).filter((f) => f.endsWith('.txt')).sort()) {
  test(`golden: ${file}`, () => {
    const path = join(dir, file);
    const want = readFileSync(path, 'utf8');
    const got = run(want);
    if (process.env['UPDATE_GOLDEN'] === '1') writeFileSync(path, got);
    else assert.equal(got, want, `${file} differs; rerun with UPDATE_GOLDEN=1 and review the diff`);
  });
}
