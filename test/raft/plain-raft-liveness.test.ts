// Two rules that keep a cluster without Pre-Vote and Check-Quorum live (docs/raft-core.md
// "Stale vote requests" and "The leader lease"), each shown with the rule on and, through
// its test-only switch, off. The soak found both dead ends with membership churn (seeds
// 1002519 and 1010906, docs/simulation.md); these are the smallest schedules that show
// the rule itself.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Network, flushReadies as flush, msgIs as is } from './harness.js';

const PLAIN = { preVote: false, checkQuorum: false } as const;

for (const off of [false, true]) {
  test(`a vote request of a stale term is answered with the newer term, and the candidate adopts it${off ? ' (switched off: no answer, the candidate stays behind)' : ''}`, () => {
    const net = Network.create(3, { ...PLAIN, ...(off ? { testOnlyIgnoreStaleVote: true } : {}) });
    // n1 runs three elections whose requests are all lost: it is at term 3, alone
    for (let k = 0; k < 3; k++) {
      net.node('n1').raw.campaign();
      flush(net);
      net.queue.length = 0;
    }
    assert.equal(net.node('n1').raw.status().term, 3);
    // n2 campaigns for term 1, and only n1 hears it
    net.node('n2').raw.campaign();
    flush(net);
    net.deliver(is('vote', 'n2', ['n1']));
    flush(net);
    const answers = net.queue.filter(is('voteResp', 'n1', ['n2']));
    net.deliver(is('voteResp', 'n1', ['n2']));
    flush(net);
    if (off) {
      assert.equal(answers.length, 0, 'n1 ignores it');
      assert.equal(net.node('n2').raw.status().term, 1, 'n2 is still behind');
      assert.equal(net.node('n2').raw.status().role, 'candidate');
    } else {
      assert.equal(answers.length, 1);
      assert.ok(answers[0]!.type === 'voteResp' && answers[0]!.reject && answers[0]!.term === 3, 'a refusal carrying term 3');
      assert.equal(net.node('n2').raw.status().term, 3, 'n2 adopts term 3');
      assert.equal(net.node('n2').raw.status().role, 'follower');
    }
  });

  test(`without Check-Quorum, a node that hears from its leader ignores a candidate of a later term${off ? ' (switched off: the candidate deposes the leader)' : ''}`, () => {
    const net = Network.create(3, { ...PLAIN, ...(off ? { testOnlyLeaseOnlyWithCheckQuorum: true } : {}) });
    net.campaign('n1');
    assert.equal(net.leader(), 'n1');
    // n3 cannot hear the leader (as a voter the leader no longer sends to) and campaigns
    net.cutLink('n1', 'n3');
    net.node('n3').raw.campaign();
    flush(net);
    net.deliver(is('vote', 'n3'));
    flush(net);
    net.recover();
    if (off) {
      assert.equal(net.node('n2').raw.status().term, 2, 'n2 took term 2');
      assert.equal(net.node('n2').raw.status().vote, 'n3');
    } else {
      assert.equal(net.node('n2').raw.status().term, 1, 'n2, in its leader\'s lease, ignored term 2');
      assert.equal(net.node('n1').raw.status().role, 'leader');
      // the lease is a timeout, not a veto: once n2 has not heard from n1 for an election
      // timeout, it answers n3 again
      net.cutLink('n1', 'n2');
      net.cutLink('n1', 'n3');
      net.tick('n2', 2 * 10);
      net.node('n3').raw.campaign();
      flush(net);
      net.deliver(is('vote', 'n3', ['n2']));
      flush(net);
      assert.equal(net.node('n2').raw.status().vote, 'n3', 'after the lease, n2 grants n3');
    }
  });
}
