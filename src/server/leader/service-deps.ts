// What the node's services (services/lock-service.ts, services/semaphore-service.ts, services/election-service.ts)
// and the leader-side coordination under them (leader-log.ts, leader-coordinator.ts) are
// built from; src/server/compose.ts wires it.
import type { ApplyOutput, Lessor } from '../../lock-fsm/index.js';
import type { RaftDriver } from '../../raft/driver.js';
import type { Metrics } from '../../metrics.js';
import type { SessionConfig } from '../../config.js';
import type { LockApp } from '../app/lock-app.js';
import type { Membership } from '../membership/membership.js';
import type { ClusterOps } from '../membership/cluster-ops.js';

export interface ServiceDeps {
  nodeId: string;
  driver: RaftDriver<ApplyOutput>;
  app: LockApp;
  lessor: Lessor;
  metrics: Metrics;
  session: SessionConfig;
  membership: Membership;
  /** why this node should not take traffic (docs/api.md "Readiness"); absent: membership's
   *  own reasons only */
  readiness?: { reason(): string | null };
  /** GET /v1/cluster, member changes, leadership transfer (docs/membership.md) */
  clusterOps: ClusterOps;
  /** monotonic ms (deadlines, and the log time entries are stamped with: log-clock.ts) */
  nowMs(): number;
  /** how long a read barrier may take before 504 */
  readTimeoutMs: number;
  /** longest election timeout, for waiting on a leadership transfer */
  electionTimeoutMaxMs: number;
  /** the driver's proposal timeout (default 5000), for the leader-side budgets */
  proposalTimeoutMs?: number;
  /** may this principal act on sessions other principals opened (its token has `admin`
   *  on the lock name; with no name, on every name)? Absent: auth is off.
   *  docs/security.md "Sessions belong to their token" */
  mayActForOthers?: (principal: string, name: string | undefined) => boolean;
}
