// A real cluster shared by the tests of one describe block: created and started before its
// first test, closed after its last (also when one fails), so no test file repeats the
// before/after pair and none forgets the close.
import { after, before } from 'node:test';
import { ClusterHarness, type HarnessOptions } from './cluster-harness.js';

/** the cluster of the enclosing describe block; with `leader` (the default) its first test
 *  starts once a leader is elected. Call the returned function inside a test. */
export function suiteCluster(o: HarnessOptions = {}, { leader = true }: { leader?: boolean } = {}): () => ClusterHarness {
  let h: ClusterHarness | undefined;
  before(async () => {
    h = await ClusterHarness.create(o);
    h.startAll();
    if (leader) await h.waitForLeader();
  });
  after(async () => {
    await h?.close();
  });
  return () => {
    if (h === undefined) throw new Error('the suite\'s cluster is there only inside its describe block\'s tests');
    return h;
  };
}
