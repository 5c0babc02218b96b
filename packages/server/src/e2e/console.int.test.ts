import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { api } from '../testing/http-client.js';
import { hasChromium, LAPTOP, PHONE, startConsoleHarness, type ConsoleHarness } from '../testing/console-browser.js';
import { isRoot } from '../testing/test-node.js';

describe('web console in a real browser (Chromium) against a real forkd serve', { skip: (!isRoot && 'needs root') || (!hasChromium && 'needs chromium (forkd setup installs it)') }, () => {
  let h: ConsoleHarness;
  let acmeKey = '';
  let betaKey = '';
  let sandboxId = '';

  before(async () => {
    h = await startConsoleHarness('console');
    acmeKey = await h.key('acme');
    betaKey = await h.key('beta');
  });
  after(async () => {
    await h?.close();
  });

  test('a wrong key is refused on the sign-in page, with the reason', async () => {
    const page = await h.page();
    await page.goto(`${h.url}/`);
    await h.screenshot(page, 'sign-in');
    await page.getByLabel('API key').fill('fk_wrong_key_000000000000000000000');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: 'UNAUTHENTICATED' }).waitFor();
    await h.screenshot(page, 'sign-in-refused');
    assert.equal(await page.getByRole('heading', { name: 'Sandboxes' }).count(), 0);
    assert.equal(await page.evaluate('sessionStorage.length'), 0, 'a refused key is not kept');
    await page.context().close();
  });

  test('sign in, create a sandbox from the form, see it listed running; sign out forgets the key', async () => {
    const page = await h.page();
    await h.signIn(page, acmeKey);
    assert.equal(await page.evaluate('localStorage.length'), 0, 'nothing in localStorage');
    await page.getByText('New sandbox').click();
    await page.getByLabel('Metadata', { exact: true }).last().fill('owner=console-test');
    await page.getByRole('button', { name: 'Create sandbox' }).click();
    const created = page.getByRole('status').filter({ hasText: /Created sbx-/ });
    await created.waitFor({ timeout: 120_000 });
    sandboxId = /Created (sbx-\S+)/.exec((await created.textContent()) ?? '')![1]!;
    const row = page.getByRole('row').filter({ hasText: sandboxId });
    await row.getByText('running').waitFor();
    assert.equal((await api({ url: h.url, apiKey: acmeKey }, 'GET', `/v1/sandboxes/${sandboxId}`)).json.metadata.owner, 'console-test');
    await h.screenshot(page, 'sandboxes');
    // Filters go through the API's own (state, metadata).
    await page.getByLabel('Metadata').first().fill('owner=nobody');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByText('No sandboxes here yet.').waitFor();
    await page.getByLabel('Metadata').first().fill('owner=console-test');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByRole('row').filter({ hasText: sandboxId }).waitFor();
    const phone = await h.page(PHONE);
    await h.signIn(phone, acmeKey);
    await phone.getByRole('row').filter({ hasText: sandboxId }).waitFor();
    await h.screenshot(phone, 'sandboxes-phone');
    assert.deepEqual(page.errors, []);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('API key').waitFor();
    assert.equal(await page.evaluate('sessionStorage.length'), 0);
    await page.context().close();
    await phone.context().close();
  });

  test('the sandbox page: type in the terminal and see the output; upload a file and see it in the file browser', async () => {
    assert.ok(sandboxId, 'an earlier test made one');
    const page = await h.page();
    await h.signIn(page, acmeKey);
    await page.getByRole('link', { name: sandboxId }).click();
    await page.getByRole('heading', { name: sandboxId }).waitFor();
    const screen = page.getByRole('group', { name: 'Terminal' });
    await screen.locator('.xterm-rows').waitFor();
    const shows = (text: string) => screen.locator('.xterm-rows', { hasText: text }).waitFor({ timeout: 30_000 });
    await shows('#');
    await screen.click();
    // What the shell prints (42) is not what was typed ($((6*7))): the output came from the sandbox.
    await page.keyboard.type('echo console-$((6*7))\n');
    await shows('console-42');
    const upload = await mkdtemp(join(tmpdir(), 'forkd-console-upload-'));
    const file = join(upload, 'hello-console.txt');
    await writeFile(file, 'uploaded from the browser\n');
    await page.getByLabel('Upload files').setInputFiles(file);
    await page.getByRole('status').filter({ hasText: 'Uploaded /root/hello-console.txt' }).waitFor();
    await rm(upload, { recursive: true });
    await page.getByRole('table', { name: 'Files in /root' }).getByText('hello-console.txt').waitFor();
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download hello-console.txt' }).click()]);
    assert.equal(download.suggestedFilename(), 'hello-console.txt');
    assert.equal(await readFile((await download.path())!, 'utf8'), 'uploaded from the browser\n');
    await screen.click();
    await page.keyboard.type("cat /root/hello-console.txt | tr ' a-z' '_A-Z'\n");
    await shows('UPLOADED_FROM_THE_BROWSER');
    // Usage charts from the metrics API; the audit trail has the upload.
    await page.getByText(/Memory: .+ of 512 MiB/).waitFor();
    await page.getByText(/CPU: .+% of 1 CPU/).waitFor();
    const audit = page.getByRole('region', { name: 'Audit trail' });
    await audit.getByRole('button', { name: 'Refresh' }).click();
    await audit.getByText('PUT /v1/sandboxes/:id/files').first().waitFor();
    const network = page.getByRole('region', { name: 'Network' });
    await network.getByText('No grants.').waitFor();
    // Network rules through PUT /v1/sandboxes/{id}/network: a bad rule is the API's refusal, a good one saved.
    await network.getByText('Change network').click();
    await network.getByLabel('Allow out').fill('not a rule!');
    await network.getByRole('button', { name: 'Save network' }).click();
    await network.getByRole('alert').filter({ hasText: 'INVALID_ARGUMENT' }).waitFor();
    // The browser logs the refused call (400) as an error; that one was asked for.
    page.errors.splice(0, page.errors.length, ...page.errors.filter((e) => !/status of 400 .*\/network,/.test(e)));
    await network.getByLabel('Allow out').fill('example.com\n*.example.org');
    await network.getByRole('button', { name: 'Save network' }).click();
    await network.getByRole('status').filter({ hasText: 'Network saved' }).waitFor();
    await network.getByText('example.com, *.example.org').waitFor();
    assert.deepEqual((await api({ url: h.url, apiKey: acmeKey }, 'GET', `/v1/sandboxes/${sandboxId}`)).json.network.allowOut, ['example.com', '*.example.org']);
    await h.screenshot(page, 'sandbox');
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('the terminal lives through a snapshot and a pause (hibernation) and resume from the page', async () => {
    const page = await h.page();
    await h.signIn(page, acmeKey);
    await page.goto(`${h.url}/#/sandboxes/${sandboxId}`);
    const screen = page.getByRole('group', { name: 'Terminal' });
    const shows = (text: string) => screen.locator('.xterm-rows', { hasText: text }).waitFor({ timeout: 30_000 });
    await shows('#');
    await screen.click();
    await page.keyboard.type('x=$((40+1)); echo kept-$x\n');
    await shows('kept-41');
    const acme = { url: h.url, apiKey: acmeKey };
    assert.equal((await api(acme, 'POST', `/v1/sandboxes/${sandboxId}/snapshots`, {})).status, 201);
    const state = page.locator('.facts dd').first();
    await page.getByRole('button', { name: 'Pause' }).click();
    await state.filter({ hasText: 'paused' }).waitFor({ timeout: 120_000 });
    await h.screenshot(page, 'sandbox-paused');
    await page.getByRole('button', { name: 'Resume' }).click();
    await state.filter({ hasText: 'running' }).waitFor({ timeout: 120_000 });
    // The same shell, its variable still set: it was kept across the snapshot, the pause and the resume.
    await screen.click();
    await page.keyboard.type('echo again-$((x+1))\n');
    await shows('again-42');
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('keyboard only: sign in with Enter, skip link first, every control a real button or link; the sandbox page on a phone', async () => {
    const page = await h.page();
    await page.goto(`${h.url}/`);
    // The key field has focus on arrival; Enter submits.
    await page.keyboard.type(acmeKey);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Sandboxes' }).waitFor();
    // From the top of the first page: the skip link, then the nav.
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate('document.activeElement.textContent'), 'Skip to content');
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate('document.activeElement.textContent'), 'Sandboxes');
    // Tabbing on reaches the sandbox's link, and Enter opens it.
    for (let i = 0; i < 30 && (await page.evaluate('document.activeElement.textContent')) !== sandboxId; i++) await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: sandboxId }).waitFor();
    // A page moved to puts focus on its content (a screen reader starts there).
    assert.equal(await page.evaluate('document.activeElement.id'), 'main');
    // Nothing clickable that is not a button, link or form control.
    assert.equal(await page.locator('[onclick], div[tabindex], span[tabindex]').count(), 0);
    await page.context().close();
    const phone = await h.page(PHONE);
    await h.signIn(phone, acmeKey);
    await phone.goto(`${h.url}/#/sandboxes/${sandboxId}`);
    await phone.getByRole('group', { name: 'Terminal' }).locator('.xterm-rows', { hasText: '#' }).waitFor();
    // The terminal is as wide as the phone, and follows the window when it grows (resize messages to the PTY).
    const cols = async () => {
      await phone.getByRole('group', { name: 'Terminal' }).click();
      const mark = `w${Math.random().toString(36).slice(2, 8)}`;
      await phone.keyboard.type(`echo ${mark}=$(tput cols)x\n`);
      const rows = phone.getByRole('group', { name: 'Terminal' }).locator('.xterm-rows');
      await rows.filter({ hasText: new RegExp(`${mark}=\\d+x`) }).waitFor();
      return Number(new RegExp(`${mark}=(\\d+)x`).exec((await rows.textContent()) ?? '')![1]);
    };
    const narrow = await cols();
    assert.ok(narrow > 10 && narrow < 60, `a phone-wide terminal (${narrow} columns)`);
    await phone.setViewportSize(LAPTOP);
    await phone.waitForTimeout(300);
    assert.ok((await cols()) > narrow + 10, 'wider after the window grew');
    await phone.setViewportSize(PHONE);
    await phone.waitForTimeout(300);
    assert.equal(await cols(), narrow, 'and narrow again after it shrank');
    const overflow = await phone.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth');
    assert.ok((overflow as number) <= 0, `the page fits a phone's width (${String(overflow)} px over)`);
    await h.screenshot(phone, 'sandbox-phone');
    assert.deepEqual(phone.errors, []);
    await phone.context().close();
  });

  test('hostile names from the API (metadata, file names) are shown as text, never run', async () => {
    const acme = { url: h.url, apiKey: acmeKey };
    const hostile = `<img src=x onerror="alert(document.title='pwned')">`;
    const s = (await api(acme, 'POST', '/v1/sandboxes', { metadata: { note: hostile } })).json;
    const put = await fetch(`${h.url}/v1/sandboxes/${s.id}/files?path=${encodeURIComponent(`/root/${hostile}.txt`)}`, { method: 'PUT', headers: { authorization: `Bearer ${acmeKey}` }, body: 'x' });
    assert.equal(put.status, 201);
    const page = await h.page();
    await h.signIn(page, acmeKey);
    await page.getByRole('row').filter({ hasText: s.id }).getByText(`note=${hostile}`).waitFor();
    await page.goto(`${h.url}/#/sandboxes/${s.id}`);
    await page.getByRole('table', { name: 'Files in /root' }).getByText(`${hostile}.txt`).waitFor();
    await h.screenshot(page, 'hostile-names');
    assert.equal(page.dialogs.length, 0, 'no alert ran');
    assert.notEqual(await page.title(), 'pwned');
    assert.equal(await page.locator('img').count(), 0);
    // Deleted from the list: the confirmation, then the row goes and the API agrees.
    await page.goto(`${h.url}/#/sandboxes`);
    await page.getByRole('button', { name: `Delete ${s.id}` }).click();
    await page.getByRole('status').filter({ hasText: `Deleted ${s.id}` }).waitFor({ timeout: 60_000 });
    assert.equal(page.dialogs.length, 1);
    assert.equal(page.dialogs[0]!.type, 'confirm');
    await page.getByRole('row').filter({ hasText: s.id }).waitFor({ state: 'detached' });
    assert.equal((await api(acme, 'GET', `/v1/sandboxes/${s.id}`)).json.error.code, 'NOT_FOUND');
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('another tenant never sees the sandbox: not listed, and its page is NOT_FOUND', async () => {
    assert.ok(sandboxId, 'the previous test made one');
    const page = await h.page();
    await h.signIn(page, betaKey);
    await page.getByText('No sandboxes here yet.').waitFor();
    assert.equal(await page.getByText(sandboxId).count(), 0);
    await page.goto(`${h.url}/#/sandboxes/${sandboxId}`);
    await page.getByRole('alert').filter({ hasText: 'NOT_FOUND' }).waitFor();
    await h.screenshot(page, 'other-tenant');
    await page.context().close();
  });
});
