// The status page in a real browser (docs/operations.md "Status page"): headless Chromium
// (Debian's `chromium`, installed by scripts/install-test-deps.sh) driven by
// playwright-core. The page is loaded from a follower of a running cluster; it must show
// the members and a held lock, follow a leader kill to the new leader without a reload, and
// load nothing from outside the node. A shared lock shows its mode and every holder; a
// semaphore its in-use/limit, its holders and its queue; an election its leader's session,
// value and token and how many campaign behind it; the live event feed shows a campaign won
// (docs/contract.md §4). A screenshot goes to test-output/ (gitignored) for a human to look
// at.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import { ClusterHarness, repoRoot } from '../support/cluster-harness.js';

const CHROMIUM = '/usr/bin/chromium';
/** the little of the browser's globals the page functions use */
interface PageGlobals {
  document: { getElementById(id: string): { textContent: string | null } | null };
  performance: { getEntriesByType(type: string): unknown[] };
}
const skip = existsSync(CHROMIUM) ? false : `${CHROMIUM} is missing (scripts/install-test-deps.sh installs Debian's chromium when it can): skipping the browser test`;
if (skip) console.log(`# ${skip}`);

describe('status page in headless Chromium', { skip, timeout: 120_000 }, () => {
  let h: ClusterHarness;
  let ctx: BrowserContext | undefined;
  let profile: string | undefined;

  before(async () => {
    h = await ClusterHarness.create({ nodes: 3 });
  });
  after(async () => {
    await ctx?.close().catch(() => undefined);
    if (profile) rmSync(profile, { recursive: true, force: true });
    await h?.close();
  });

  it('shows members and locks, follows a leader change live, loads nothing from outside', async () => {
    h.startAll();
    const leader = await h.waitForLeader();
    const grant = await h.request(leader, 'POST', '/v1/locks/billing%2Finvoice-42/acquire', { ttl_ms: 60_000, owner: 'worker-7' });
    assert.equal(grant.status, 200, grant.text);
    for (let i = 0; i < 3; i++) assert.equal((await h.request(leader, 'POST', `/v1/locks/jobs/nightly-${i}/acquire`, { ttl_ms: 60_000, owner: `cron@host-${i}` })).status, 200);
    const readers = [];
    for (const owner of ['reader-a', 'reader-b']) {
      const r = await h.request(leader, 'POST', '/v1/locks/docs%2Fmanual/acquire', { ttl_ms: 60_000, owner, mode: 'shared' });
      assert.equal(r.status, 200, r.text);
      readers.push(r.body);
    }
    for (const owner of ['pool-a', 'pool-b']) assert.equal((await h.request(leader, 'POST', '/v1/semaphores/db%2Fpool/acquire', { ttl_ms: 60_000, owner, limit: 2 })).status, 200);
    // a third asks and waits (answered when the leader is killed below)
    const queued = h.requestRaw(leader, 'POST', '/v1/semaphores/db%2Fpool/acquire', JSON.stringify({ ttl_ms: 60_000, owner: 'pool-c', limit: 2, wait_ms: 120_000 }), { 'content-type': 'application/json' }, 130_000).catch(() => undefined);
    // an election with its leader and one more campaigner waiting behind it
    const won = await h.request(leader, 'POST', '/v1/elections/svc%2Fprimary/campaign', { ttl_ms: 60_000, owner: 'primary-a', value: 'http://10.0.0.7:8080' });
    assert.equal(won.status, 200, won.text);
    const campaigning = h.requestRaw(leader, 'POST', '/v1/elections/svc%2Fprimary/campaign', JSON.stringify({ ttl_ms: 60_000, owner: 'primary-b', value: 'http://10.0.0.8:8080', wait_ms: 120_000 }), { 'content-type': 'application/json' }, 130_000).catch(() => undefined);
    // a contended lock (docs/contract.md §5 "Contention"): held, two requests waiting on it,
    // one of them a lock set
    const hot = await h.request(leader, 'POST', '/v1/locks/hot%2Faccount/acquire', { ttl_ms: 60_000, owner: 'hot-holder' });
    assert.equal(hot.status, 200, hot.text);
    const hotWaiters = [
      h.requestRaw(leader, 'POST', '/v1/locks/hot%2Faccount/acquire', JSON.stringify({ ttl_ms: 60_000, owner: 'hot-b', wait_ms: 120_000 }), { 'content-type': 'application/json' }, 130_000).catch(() => undefined),
      h.requestRaw(leader, 'POST', '/v1/locks/acquire-all', JSON.stringify({ names: ['hot/account', 'hot/other'], ttl_ms: 60_000, owner: 'hot-c', wait_ms: 120_000 }), { 'content-type': 'application/json' }, 130_000).catch(() => undefined),
    ];
    const follower = h.nodes.find((n) => n.id !== leader)!;

    const { chromium } = await import('playwright-core');
    profile = mkdtempSync(join(tmpdir(), 'raftlock-chromium-'));
    ctx = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      viewport: { width: 1280, height: 860 },
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
    });
    const page: Page = ctx.pages()[0] ?? (await ctx.newPage());
    const origin = new URL(follower.api).origin;
    const foreign: string[] = [];
    page.on('request', (r) => {
      const u = r.url();
      if (!u.startsWith(origin) && !u.startsWith('data:')) foreign.push(u);
    });
    const pageErrors: string[] = [];
    page.on('pageerror', (e) => pageErrors.push(e.message));

    await page.goto(`${follower.api}/`);
    // members: all three, the leader marked, this node named
    await page.waitForSelector(`tr[data-member="${leader}"][data-role="leader"]`, { timeout: 10_000 });
    assert.equal(await page.locator('#members tbody tr').count(), 3);
    assert.equal((await page.textContent('#leader-id'))?.trim(), leader);
    // the held lock with its holder and token (no reload: polling)
    const row = page.locator('tr[data-lock="billing/invoice-42"]');
    await row.waitFor({ timeout: 10_000 });
    assert.match((await row.textContent()) ?? '', /worker-7/);
    assert.equal(await row.locator('td[data-token]').getAttribute('data-token'), String(grant.body.fencing_token));
    // five locks, the contended one, and the election's lock (an election is a lock whose grant carries a value)
    assert.equal((await page.textContent('#locks-count'))?.trim(), '7');
    // the shared lock: its mode and both holders with their tokens
    const shared = page.locator('tr[data-lock="docs/manual"]');
    await shared.waitFor({ timeout: 10_000 });
    assert.equal(await shared.getAttribute('data-mode'), 'shared');
    const sharedText = (await shared.textContent()) ?? '';
    for (const r of readers) assert.ok(sharedText.includes(String(r.fencing_token)), `token ${r.fencing_token} shown: ${sharedText}`);
    assert.match(sharedText, /reader-a[\s\S]*reader-b/);
    assert.equal(await shared.locator('.who').count(), 2);
    assert.equal(await row.getAttribute('data-mode'), 'exclusive');
    // the semaphore: 2 of 2 in use, both holders, one waiting (the page polls: wait for it)
    const sem = page.locator('tr[data-semaphore="db/pool"]');
    await page.waitForSelector('tr[data-semaphore="db/pool"] td[data-waiting="1"]', { timeout: 10_000 });
    assert.equal(await sem.locator('td[data-in-use]').getAttribute('data-in-use'), '2/2');
    assert.match((await sem.textContent()) ?? '', /pool-a[\s\S]*pool-b[\s\S]*1 waiting[\s\S]*pool-c/);
    // the election: leader session and value, its token, one campaigner waiting
    const election = page.locator('tr[data-election="svc/primary"]');
    await page.waitForSelector('tr[data-election="svc/primary"] td[data-waiting="1"]', { timeout: 10_000 });
    assert.equal(await election.locator('td[data-token]').getAttribute('data-token'), String(won.body.fencing_token));
    assert.equal(await election.locator('td[data-value]').getAttribute('data-value'), 'http://10.0.0.7:8080');
    assert.equal(await election.locator('.who').getAttribute('data-session'), won.body.session_id);
    assert.match((await election.textContent()) ?? '', /primary-a/);
    // the most contended locks: hot/account first, two waiting, its holder named; the set's
    // other name is free but held for the set
    const contended = page.locator('tr[data-contended="hot/account"]');
    await page.waitForSelector('tr[data-contended="hot/account"] td[data-waiters="2"]', { timeout: 10_000 });
    assert.equal(await page.locator('#contended tbody tr').first().getAttribute('data-contended'), 'hot/account');
    assert.match((await contended.textContent()) ?? '', /hot-holder/);
    assert.ok(Number(await contended.locator('td[data-waited-ms]').getAttribute('data-waited-ms')) >= 0);
    await page.waitForSelector('tr[data-contended="hot/other"] td[data-waiters="1"]', { timeout: 10_000 });
    // the live chart of grants per second: a bar per second of the last minute, the grants
    // made above among them
    await page.waitForFunction(() => Number((globalThis as unknown as { document: { getElementById(id: string): { getAttribute(a: string): string | null } | null } }).document.getElementById('activity-chart')?.getAttribute('data-total') ?? '0') > 0, undefined, { timeout: 10_000 });
    assert.equal(await page.locator('#activity-chart rect.grants').count(), 60);
    assert.match((await page.textContent('#activity-hint')) ?? '', /grants in the last minute/);
    // page-side functions reach the DOM through globalThis: this project compiles without
    // the DOM library (and the page's CSP forbids evaluating strings)
    const navigations = (): Promise<number> => page.evaluate(() => (globalThis as unknown as PageGlobals).performance.getEntriesByType('navigation').length);
    const loads = await navigations();
    // the live event feed (GET /v1/watch): a grant made now shows up without a reload
    assert.equal((await h.request(leader, 'POST', '/v1/locks/feed%2Fdemo/acquire', { ttl_ms: 60_000 })).status, 200);
    await page.waitForFunction(() => ((globalThis as unknown as PageGlobals).document.getElementById('events')?.textContent ?? '').includes('acquiredlock feed/demo'), undefined, { timeout: 10_000 });
    // a campaign won shows as acquired, kind election, with its value
    assert.equal((await h.request(leader, 'POST', '/v1/elections/feed%2Fleader/campaign', { ttl_ms: 60_000, value: 'v-feed' })).status, 200);
    await page.waitForFunction(() => ((globalThis as unknown as PageGlobals).document.getElementById('events')?.textContent ?? '').includes('acquiredelection feed/leader'), undefined, { timeout: 10_000 });
    assert.match((await page.textContent('#events')) ?? '', /value "v-feed"/);

    // kill the leader: the page (served by a follower) shows the new one on its own
    await h.kill(leader);
    await page.waitForFunction((old) => {
      const t = (globalThis as unknown as PageGlobals).document.getElementById('leader-id')?.textContent?.trim();
      return !!t && t !== old && t !== 'none' && t !== '–';
    }, leader, { timeout: 20_000 });
    const newLeader = (await page.textContent('#leader-id'))!.trim();
    assert.notEqual(newLeader, leader);
    await page.waitForSelector(`tr[data-member="${newLeader}"][data-role="leader"]`, { timeout: 10_000 });
    await page.waitForSelector(`tr[data-member="${leader}"][data-role="unreachable"]`, { timeout: 10_000 });
    // the leader change is in the history list, and the page was never reloaded
    assert.match((await page.textContent('#changes')) ?? '', new RegExp(newLeader));
    assert.equal(await navigations(), loads);
    assert.equal(await page.locator('tr[data-lock="billing/invoice-42"]').count(), 1, 'the lock is still shown');

    const outDir = join(repoRoot, 'test-output');
    mkdirSync(outDir, { recursive: true });
    const shot = join(outDir, 'status-page.png');
    await page.screenshot({ path: shot, fullPage: true });
    console.log(`# screenshot: ${shot}`);

    // the docs page renders from the same node, self-contained
    await page.goto(`${follower.api}/docs`);
    assert.match((await page.textContent('h1')) ?? '', /raftlock API/);
    assert.ok((await page.locator('details.op').count()) >= 18);

    await queued;
    await campaigning;
    await Promise.all(hotWaiters);
    assert.deepEqual(foreign, [], 'the page loaded something from outside the node');
    assert.deepEqual(pageErrors, [], 'script errors on the page');
  });
});
