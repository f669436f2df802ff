// The membership routes with inject() around a fake service (docs/membership.md "See the
// cluster"): the learner flag and the promote route, /readyz with a reason, and a change
// that follows leadership once (a leader asked to remove itself hands over, then relays the
// request to the new leader).
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { ApiError } from '../../src/api/errors.js';
import type { ClusterView, RequestContext } from '../../src/api/service.js';
import { ok, refused, type Result } from '../../src/api/service-result.js';
import { FakeService } from '../api/fake-service.js';
import { assertError, json, makeApp } from '../api/helpers.js';

class MembershipFake extends FakeService {
  reason: string | null = null;
  /** when set, removeMember acts like a leader removing itself: leadership moves there */
  moveLeadershipTo: string | null = null;
  notReadyReason(): string | null {
    return this.reason;
  }
  override async promoteMember(id: string, _ctx: RequestContext): Promise<Result<ClusterView>> {
    if (id !== 'n9') return refused(new ApiError('not_found', `${id} is not a member`));
    const c = this.cluster();
    c.members.push({ id, api: 'http://127.0.0.1:17009', peer: 'http://127.0.0.1:17109', role: 'follower' });
    return ok(c);
  }
  override async removeMember(id: string, ctx: RequestContext): Promise<Result<ClusterView>> {
    if (this.moveLeadershipTo) {
      this.routingView = { isLeader: false, leaderApi: this.moveLeadershipTo };
      return refused(new ApiError('unavailable', 'leadership moved; retry there'));
    }
    return super.removeMember(id, ctx);
  }
}

describe('membership routes', () => {
  const apps: { close(): Promise<unknown> }[] = [];
  after(async () => {
    for (const a of apps) await a.close();
  });

  it('POST /v1/cluster/members passes learner through and rejects a non-boolean', async () => {
    const service = new MembershipFake();
    const { app } = makeApp({ service });
    apps.push(app);
    const ok = await app.inject({ method: 'POST', url: '/v1/cluster/members', payload: { id: 'n9', api: 'http://127.0.0.1:17009/', peer: 'http://127.0.0.1:17109', learner: true } });
    assert.equal(ok.statusCode, 200, ok.body);
    assert.deepEqual(service.last('addMember')?.args[0], { id: 'n9', api: 'http://127.0.0.1:17009', peer: 'http://127.0.0.1:17109', learner: true });
    const bad = await app.inject({ method: 'POST', url: '/v1/cluster/members', payload: { id: 'n9', api: 'http://127.0.0.1:17009', peer: 'http://127.0.0.1:17109', learner: 'yes' } });
    assertError(bad, 400, 'invalid_request', 'learner');
  });

  it('POST /v1/cluster/members/{id}/promote', async () => {
    const service = new MembershipFake();
    const { app } = makeApp({ service });
    apps.push(app);
    const ok = await app.inject({ method: 'POST', url: '/v1/cluster/members/n9/promote' });
    assert.equal(ok.statusCode, 200, ok.body);
    assert.ok((json(ok).members as { id: string }[]).some((m) => m.id === 'n9'));
    assertError(await app.inject({ method: 'POST', url: '/v1/cluster/members/n8/promote' }), 404, 'not_found');
    assertError(await app.inject({ method: 'POST', url: '/v1/cluster/members/bad..id/promote' }), 400, 'invalid_request');
    assertError(await app.inject({ method: 'POST', url: '/v1/cluster/members/n9/promote', payload: { x: 1 } }), 400, 'invalid_request');
  });

  it('/readyz names the reason a node is not ready (removed, joining)', async () => {
    const service = new MembershipFake();
    const { app } = makeApp({ service });
    apps.push(app);
    assert.equal((await app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200);
    service.reason = 'this node was removed from the cluster';
    const r = await app.inject({ method: 'GET', url: '/readyz' });
    assertError(r, 503, 'unavailable', 'removed from the cluster');
    assert.ok(r.headers['retry-after']);
  });

  it('a removal that moved leadership is relayed once to the new leader', async () => {
    // the "new leader": a second server that answers the relayed DELETE itself
    const newLeader = new MembershipFake();
    const { app: leaderApp } = makeApp({ service: newLeader, nodeId: 'n2' });
    apps.push(leaderApp);
    await leaderApp.listen({ host: '127.0.0.1', port: 0 });
    const port = (leaderApp.server.address() as AddressInfo).port;

    const oldLeader = new MembershipFake();
    oldLeader.moveLeadershipTo = `http://127.0.0.1:${port}`;
    const { app } = makeApp({ service: oldLeader });
    apps.push(app);
    const r = await app.inject({ method: 'DELETE', url: '/v1/cluster/members/n1' });
    assert.equal(r.statusCode, 200, r.body);
    assert.equal(newLeader.last('removeMember')?.args[0], 'n1', 'the new leader did the removal');

    // a request that was itself relayed is not relayed a second time
    const again = new MembershipFake();
    again.moveLeadershipTo = `http://127.0.0.1:${port}`;
    const { app: app2 } = makeApp({ service: again });
    apps.push(app2);
    const r2 = await app2.inject({ method: 'DELETE', url: '/v1/cluster/members/n1', headers: { 'x-raftlock-forwarded': 'n3' } });
    assertError(r2, 503, 'unavailable');
  });
});
