import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { ForkdClient, type Sandbox } from '@forkd/sdk';
import { hasChromium, PHONE, startConsoleHarness, type ConsoleHarness } from '../testing/console-browser.js';
import { isRoot } from '../testing/test-node.js';

/** The page fits its viewport's width (nothing but the strip and the tree scroll sideways, inside themselves). */
async function fitsWidth(page: Page): Promise<void> {
  const [scroll, width] = (await page.evaluate('[document.documentElement.scrollWidth, window.innerWidth]')) as [number, number];
  assert.ok(scroll <= width, `the page is ${scroll}px wide in a ${width}px window`);
}

describe('web console views in a real browser: timeline, lineage, approvals, admin', { skip: (!isRoot && 'needs root') || (!hasChromium && 'needs chromium (forkd setup installs it)') }, () => {
  let h: ConsoleHarness;
  let acmeKey = '';
  let sb: Sandbox;
  let forks: string[] = [];

  before(async () => {
    h = await startConsoleHarness('console-views');
    acmeKey = await h.key('acme');
    sb = await new ForkdClient({ url: h.url, apiKey: acmeKey }).sandboxes.create({});
    await sb.files.write('/root/keep.txt', 'kept by the timeline\n');
  });
  after(async () => {
    await h?.close();
  });

  /** A new page; the favicon Chromium asks for by itself is answered empty (the console serves none yet), so a 404 of it is not one of the page's errors. */
  const open = async (viewport?: { width: number; height: number }) => {
    const page = await h.page(viewport);
    await page.route('**/favicon.ico', (r) => r.fulfill({ status: 204 }));
    return page;
  };
  const timeline = async (page: Page) => {
    await page.goto(`${h.url}/#/sandboxes/${sb.id}/timeline`);
    await page.getByRole('heading', { name: 'Timeline' }).waitFor();
  };

  test('timeline: take a named snapshot; delete a file in the terminal; rewind from the timeline: the terminal says so and the file is back', async () => {
    const tl = await open();
    await h.signIn(tl, acmeKey);
    await timeline(tl);
    await tl.getByLabel('Snapshot name').fill('before-delete');
    await tl.getByRole('button', { name: 'Take snapshot' }).click();
    await tl.getByRole('status').filter({ hasText: 'Took snapshot before-delete' }).waitFor({ timeout: 60_000 });
    const item = tl.locator('[data-snapshot]', { hasText: 'before-delete' });
    await item.getByText('pinned').waitFor();
    assert.equal(await item.getAttribute('aria-pressed'), 'true', 'the new snapshot is the one shown');
    await h.screenshot(tl, 'timeline');

    const sp = await open();
    await h.signIn(sp, acmeKey);
    await sp.goto(`${h.url}/#/sandboxes/${sb.id}`);
    const screen = sp.getByRole('group', { name: 'Terminal' });
    const shows = (text: string | RegExp) => screen.locator('.xterm-rows', { hasText: text }).waitFor({ timeout: 30_000 });
    await shows('#');
    await screen.click();
    await sp.keyboard.type('rm /root/keep.txt && echo removed-$((40+2))\n');
    await shows('removed-42');
    assert.equal(await sb.files.exists('/root/keep.txt'), false);

    await item.click();
    await tl.getByRole('button', { name: `Rewind to ${await item.getAttribute('data-snapshot')}` }).click();
    await tl.getByRole('status').filter({ hasText: /Rewound sbx-\S+ to before-delete/ }).waitFor({ timeout: 60_000 });
    await shows(/rewound/);
    const files = sp.getByRole('region', { name: 'Files' });
    await files.getByRole('button', { name: 'Refresh' }).click();
    await files.getByRole('table', { name: 'Files in /root' }).getByText('keep.txt').waitFor();
    await h.screenshot(sp, 'sandbox-after-rewind');
    assert.ok((await tl.locator('[data-snapshot].reason-rewind').count()) >= 1, 'the state left is a snapshot in the strip');
    await h.screenshot(tl, 'timeline-rewound');
    // A snapshot taken elsewhere shows up in the open strip by itself (polled).
    await sb.snapshot({ name: 'from-the-sdk' });
    await tl.locator('[data-snapshot]', { hasText: 'from-the-sdk' }).waitFor({ timeout: 20_000 });
    assert.deepEqual([...tl.errors, ...sp.errors], []);
    await tl.context().close();
    await sp.context().close();
  });

  test('fork from the timeline; the forks appear in the lineage tree, each a link to its sandbox', async () => {
    const page = await open();
    await h.signIn(page, acmeKey);
    await timeline(page);
    // By keyboard: the strip's arrows reach the snapshot, Enter selects it.
    const strip = page.getByRole('list', { name: 'Snapshots, oldest first' });
    await strip.locator('[data-snapshot]').last().focus();
    await page.keyboard.press('Home');
    const named = strip.locator('[data-snapshot]', { hasText: 'before-delete' });
    const want = await named.getAttribute('data-snapshot');
    const focused = async () => (await page.evaluate('document.activeElement?.dataset.snapshot')) === want;
    for (let i = 0; i < 10 && !(await focused()); i++) await page.keyboard.press('ArrowRight');
    assert.ok(await focused(), 'the arrows reached the named snapshot');
    await page.keyboard.press('Enter');
    assert.equal(await named.getAttribute('aria-pressed'), 'true');
    await page.getByLabel('Forks').fill('2');
    await page.getByRole('button', { name: 'Fork', exact: true }).click();
    await page.getByRole('status').filter({ hasText: /Forked snap-\S+ into 2 sandboxes/ }).waitFor({ timeout: 120_000 });
    forks = (await page.locator('a[href^="#/sandboxes/sbx-"]').filter({ hasText: /^sbx-/ }).allTextContents()).filter((id) => id !== sb.id);
    assert.equal(forks.length, 2);
    await page.getByRole('link', { name: 'See the lineage' }).click();
    await page.getByRole('heading', { name: 'Lineage' }).waitFor();
    for (const id of [sb.id, ...forks]) await page.getByRole('link', { name: new RegExp(`^${id},`) }).waitFor();
    const edges = page.locator('svg.lineage .edge');
    assert.equal(await edges.count(), 2);
    await h.screenshot(page, 'lineage');
    // From a fork's own page the lineage is the same tree (walked up to its root), the fork marked.
    await page.goto(`${h.url}/#/sandboxes/${forks[0]}/lineage`);
    await page.getByRole('link', { name: `${forks[0]}, running (this sandbox)` }).waitFor();
    await page.getByRole('link', { name: new RegExp(`^${sb.id},`) }).focus();
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: sb.id }).waitFor();
    const phone = await open(PHONE);
    await h.signIn(phone, acmeKey);
    await phone.goto(`${h.url}/#/sandboxes/${sb.id}/lineage`);
    await phone.locator('svg.lineage').waitFor();
    await fitsWidth(phone);
    await h.screenshot(phone, 'lineage-phone');
    await timeline(phone);
    await phone.locator('[data-snapshot]').first().waitFor();
    await fitsWidth(phone);
    await h.screenshot(phone, 'timeline-phone');
    assert.deepEqual([...page.errors, ...phone.errors], []);
    await page.context().close();
    await phone.context().close();
  });

  test('a call waiting under requireApproval appears in Approvals with its rule and environment, and runs after "Approve"', async () => {
    await sb.setPolicy({ exec: { requireApproval: ['^echo approved-'] } });
    const page = await open();
    await h.signIn(page, acmeKey);
    await page.getByRole('link', { name: 'Approvals' }).click();
    await page.getByText('Nothing is waiting for approval.').waitFor();
    // The command and its env are the tenant's own bytes: shown as text, never as markup.
    const hostile = '<img src=x onerror=alert(1)>';
    const result = sb.exec(['echo', 'approved-by-console', hostile], { env: { DEPLOY_TARGET: 'staging', NOTE: hostile }, cwd: '/tmp' });
    result.catch(() => {});
    const card = page.locator('article.approval', { hasText: 'echo approved-by-console' });
    await card.waitFor({ timeout: 10_000 });
    await card.getByText(/requireApproval\[0\]/).waitFor();
    await card.getByText('DEPLOY_TARGET=staging').waitFor();
    await card.getByText(`NOTE=${hostile}`).waitFor();
    assert.equal(await page.locator('article.approval img').count(), 0, 'no element made of the command or env');
    await card.getByText('/tmp').waitFor();
    await h.screenshot(page, 'approvals');
    await card.getByRole('button', { name: /^Approve: echo approved-by-console/ }).click();
    const r = await result;
    assert.equal(r.stdout, `approved-by-console ${hostile}\n`);
    await page.getByText('Nothing is waiting for approval.').waitFor();
    await sb.setPolicy({});
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('admin: tenants with limits and usage, keys (create, revoke), nodes; hidden from a tenant key', async () => {
    const tenant = await open();
    await h.signIn(tenant, acmeKey);
    await tenant.getByRole('link', { name: 'Approvals' }).waitFor();
    assert.equal(await tenant.getByRole('link', { name: 'Admin' }).count(), 0, 'no Admin link for a tenant key');
    await tenant.goto(`${h.url}/#/admin`);
    await tenant.getByRole('alert').filter({ hasText: 'needs an admin key' }).waitFor();
    await h.screenshot(tenant, 'admin-tenant-key');

    const page = await open();
    await h.signIn(page, h.daemon.apiKey);
    await page.getByRole('link', { name: 'Admin' }).click();
    const tenants = page.getByRole('table', { name: 'Tenants' });
    const acme = tenants.getByRole('row').filter({ hasText: 'acme' });
    await acme.waitFor();
    assert.match((await acme.textContent()) ?? '', /3 \/ no limit/, 'acme runs its sandbox and two forks');
    await page.getByText('This server runs one node (no fleet).').waitFor();
    // Limits: acme capped at the 3 it runs (the row marks it), then back to the server's default.
    await page.getByLabel('Tenant to limit').selectOption('acme');
    await page.getByLabel('runningSandboxes').fill('3');
    await page.getByRole('button', { name: 'Save limits' }).click();
    await acme.locator('.at-limit', { hasText: '3 / 3' }).waitFor();
    const admin = new ForkdClient({ url: h.url, apiKey: h.daemon.apiKey });
    assert.deepEqual((await admin.tenants.limits('acme')).overrides, { runningSandboxes: 3 });
    await page.getByLabel('runningSandboxes').fill('');
    await page.getByRole('button', { name: 'Save limits' }).click();
    await acme.locator('.at-limit').waitFor({ state: 'detached' });
    assert.deepEqual((await admin.tenants.limits('acme')).overrides, {});
    await page.getByLabel('Tenant', { exact: true }).fill('gamma');
    await page.getByLabel('Key name').fill('from-the-console');
    await page.getByRole('button', { name: 'Create key' }).click();
    const key = (await page.getByRole('status', { name: 'New key' }).textContent()) ?? '';
    assert.ok(key.length > 20, key);
    const row = page.getByRole('table', { name: 'API keys' }).getByRole('row').filter({ hasText: 'gamma' });
    await row.waitFor();
    await h.screenshot(page, 'admin');
    await row.getByRole('button', { name: /^Revoke key/ }).click();
    await row.getByText('revoked').waitFor();
    const refused = await fetch(`${h.url}/v1/sandboxes`, { headers: { authorization: `Bearer ${key}` } });
    assert.equal(refused.status, 401, 'the revoked key is refused');
    const phone = await open(PHONE);
    await h.signIn(phone, h.daemon.apiKey);
    await phone.goto(`${h.url}/#/admin`);
    await phone.getByRole('table', { name: 'Tenants' }).waitFor();
    await fitsWidth(phone);
    await h.screenshot(phone, 'admin-phone');
    // The one refused call the admin pages make: GET /v1/nodes answers FAILED_PRECONDITION (412) on a one-node server, shown as "one node".
    const unexpected = (errors: string[]) => errors.filter((e) => !/status of 412/.test(e));
    assert.deepEqual([...unexpected(page.errors), ...unexpected(phone.errors), ...tenant.errors], []);
    for (const p of [page, tenant, phone]) await p.context().close();
  });
});
