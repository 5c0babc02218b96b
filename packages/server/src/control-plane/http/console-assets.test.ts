import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { testApp } from './app-test-kit.js';
import { CONSOLE_CSP, CONSOLE_DIR, loadConsoleAssets } from './console-assets.js';
import { REPO_ROOT } from '../../shared/config.js';

test('GET / is the console page, with a strict CSP, nosniff and revalidation; the API keeps its paths', async () => {
  const { app, call } = await testApp();
  const page = await app.request('/');
  assert.equal(page.status, 200);
  assert.match(page.headers.get('content-type')!, /^text\/html/);
  assert.equal(page.headers.get('content-security-policy'), CONSOLE_CSP);
  assert.match(CONSOLE_CSP, /script-src 'self';/);
  assert.doesNotMatch(CONSOLE_CSP, /script-src[^;]*unsafe/);
  assert.equal(page.headers.get('x-content-type-options'), 'nosniff');
  assert.equal(page.headers.get('cache-control'), 'no-cache');
  const html = await page.text();
  assert.match(html, /<script type="module" src="\/console\/app\/main.js"><\/script>/);
  // No inline script anywhere in the page: the CSP would refuse it.
  assert.doesNotMatch(html.replace(/<script type="module" src="[^"]+"><\/script>/g, ''), /<script/);
  const again = await app.request('/', { headers: { 'if-none-match': page.headers.get('etag')! } });
  assert.equal(again.status, 304);
  assert.equal((await call('GET', '/v1/health', undefined, null)).status, 200);
  assert.equal((await call('GET', '/v1/sandboxes', undefined, null)).json.error.code, 'UNAUTHENTICATED');
  assert.equal((await app.request('/nope')).status, 404);
});

test('the modules are served as JavaScript; vendor paths carry the package files, not the re-exports tsc compiled there', async () => {
  const { app } = await testApp();
  const main = await app.request('/console/app/main.js');
  assert.equal(main.status, 200);
  assert.match(main.headers.get('content-type')!, /^text\/javascript/);
  const errors = await (await app.request('/console/app/vendor/errors.js')).text();
  assert.equal(errors, readFileSync(join(REPO_ROOT, 'packages/protocol/dist/errors.js'), 'utf8'));
  const xterm = await app.request('/console/app/vendor/xterm.js');
  assert.equal(xterm.status, 200);
  assert.doesNotMatch(await xterm.text(), /^import /m, 'a browser module with no bare imports');
  assert.equal((await app.request('/console/xterm.css')).status, 200);
  for (const p of ['/console/app/../../package.json', '/console/app/api.test.js', '/console/app/main.js.map', '/console/assets.json', '/console/']) {
    assert.equal((await app.request(p)).status, 404, p);
  }
});

/** An import or re-export of a bare specifier (the browser has no import map to resolve one). */
const BARE_IMPORT = /^\s*(?:import|export)\b[^;]*?\bfrom\s*['"](?![./])|\bimport\(\s*['"](?![./])/m;

test('every vendor module the browser loads is a standalone module (no import a browser could not resolve)', () => {
  const files = loadConsoleAssets(CONSOLE_DIR);
  const vendor = [...files].filter(([p]) => p.startsWith('/console/app/vendor/'));
  assert.ok(vendor.length >= 4);
  for (const [p, a] of files) if (p.endsWith('.js')) assert.doesNotMatch(a.body.toString(), BARE_IMPORT, p);
  assert.match("import { x } from '@forkd/protocol';", BARE_IMPORT);
});
