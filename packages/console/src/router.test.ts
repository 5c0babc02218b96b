import { test } from 'node:test';
import assert from 'node:assert/strict';
import { matchRoute, parseHash, toHash } from './router.js';
import { ROUTES } from './routes.js';

test('parseHash: path and query of the hash; empty is /', () => {
  assert.deepEqual(parseHash('').path, '/');
  assert.deepEqual(parseHash('#').path, '/');
  const l = parseHash('#/sandboxes?state=running&metadata=a%3Db');
  assert.equal(l.path, '/sandboxes');
  assert.equal(l.query.get('state'), 'running');
  assert.equal(l.query.get('metadata'), 'a=b');
  assert.equal(parseHash('#sandboxes').path, '/sandboxes');
});

test('toHash leaves out empty values and round-trips through parseHash', () => {
  assert.equal(toHash('/sandboxes', { state: '', metadata: undefined }), '#/sandboxes');
  const h = toHash('/sandboxes', { metadata: 'owner=a b&c' });
  assert.equal(parseHash(h).query.get('metadata'), 'owner=a b&c');
});

test('matchRoute: literal segments, params decoded, first match wins, no partial matches', () => {
  const routes = [{ pattern: '/a' }, { pattern: '/a/:id' }, { pattern: '/a/:id/x' }, { pattern: '/a/new' }];
  assert.equal(matchRoute(routes, '/a')?.route.pattern, '/a');
  assert.deepEqual(matchRoute(routes, '/a/sbx%2D1')?.params, { id: 'sbx-1' });
  assert.equal(matchRoute(routes, '/a/new')?.route.pattern, '/a/:id');
  assert.equal(matchRoute(routes, '/a/1/x')?.route.pattern, '/a/:id/x');
  assert.equal(matchRoute(routes, '/a/1/y'), undefined);
  assert.equal(matchRoute(routes, '/b'), undefined);
  assert.equal(matchRoute(routes, '/a/%E0%A4%A'), undefined, 'a malformed escape matches nothing');
});

test('the route table has every console page; the Admin link is for admin keys only', () => {
  for (const p of ['/sandboxes', '/sandboxes/sbx-1', '/sandboxes/sbx-1/timeline', '/sandboxes/sbx-1/lineage', '/approvals', '/admin']) {
    assert.ok(matchRoute(ROUTES, p), p);
  }
  assert.deepEqual(ROUTES.filter((r) => r.nav).map((r) => r.pattern), ['/sandboxes', '/approvals', '/admin']);
  assert.deepEqual(ROUTES.filter((r) => r.adminOnly).map((r) => r.pattern), ['/admin']);
});
