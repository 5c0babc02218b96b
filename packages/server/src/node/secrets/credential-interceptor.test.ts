import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { NodeCredential } from '@forkd/protocol';
import type { NodeEvent } from '../node-event.js';
import { CredentialInterceptor } from './credential-interceptor.js';
import { credentialApplies, hostMatches, pathMatches } from './credential-match.js';

const cred = (extra: Partial<NodeCredential> = {}): NodeCredential => ({ grantId: 'grt-0000000000000001', secret: 'TOKEN', hosts: ['api.example.com'], headerName: 'Authorization', headerValue: 'Bearer v4lue', ...extra });
const req = (extra: Partial<{ host: string; port: number; method: string; path: string; tls: boolean; headers: Record<string, string> }> = {}) => ({ host: 'api.example.com', port: 443, method: 'GET', path: '/v1/x', tls: true, ...extra });

test('host patterns: exact names, *.suffix for sub-domains only, an optional port', () => {
  assert.ok(hostMatches('api.example.com', 'api.example.com', 443));
  assert.ok(hostMatches('api.example.com', 'API.example.com.', 80));
  assert.ok(!hostMatches('api.example.com', 'evil-api.example.com', 443));
  assert.ok(!hostMatches('api.example.com', 'api.example.com.evil.net', 443));
  assert.ok(hostMatches('api.example.com:8443', 'api.example.com', 8443));
  assert.ok(!hostMatches('api.example.com:8443', 'api.example.com', 443));
  assert.ok(hostMatches('*.example.com', 'a.b.example.com', 443));
  assert.ok(!hostMatches('*.example.com', 'example.com', 443));
  assert.ok(!hostMatches('*.example.com', 'badexample.com', 443));
});

test('path prefixes end at a segment; methods and expiry are checked per request', () => {
  assert.ok(pathMatches('/v1', '/v1'));
  assert.ok(pathMatches('/v1', '/v1/chat?x=1'));
  assert.ok(pathMatches('/v1', '/v1?x'));
  assert.ok(!pathMatches('/v1', '/v10'));
  assert.ok(pathMatches('/v1/', '/v1/a'));
  const c = cred({ methods: ['POST'], paths: ['/v1'] });
  assert.ok(credentialApplies(c, req({ method: 'POST' }), 0));
  assert.ok(!credentialApplies(c, req({ method: 'GET' }), 0));
  assert.ok(!credentialApplies(c, req({ method: 'POST', path: '/admin' }), 0));
  // Matched on the normalized path: a path that escapes the prefix, or that servers read differently, gets nothing.
  for (const path of ['/v1/../admin', '/v1/%2e%2e/admin', '/v1%2f..%2fadmin', '/v1/..%2fadmin', '/v1\\..\\admin', '/v1//../admin', '/v1;/../admin', '/v1/..;/admin']) {
    assert.ok(!credentialApplies(c, req({ method: 'POST', path }), 0), path);
  }
  assert.ok(credentialApplies(c, req({ method: 'POST', path: '/%761/chat' }), 0), 'decoded: /v1/chat');
  assert.ok(!credentialApplies(cred({ paths: ['/v1'] }), req({ path: '/v1/./x' }), 0));
  // A method claimed in a header or _method is not the method: a method-limited grant does not apply.
  for (const h of ['X-HTTP-Method-Override', 'x-http-method', 'X-Method-Override']) {
    assert.ok(!credentialApplies(c, req({ method: 'POST', headers: { [h.toLowerCase()]: 'DELETE' } }), 0), h);
  }
  assert.ok(!credentialApplies(c, req({ method: 'POST', path: '/v1/x?_method=DELETE' }), 0));
  assert.ok(credentialApplies(cred(), req({ headers: { 'x-http-method-override': 'DELETE' } }), 0), 'a grant without method limits is unaffected');
  const e = cred({ expiresAt: new Date(1000).toISOString() });
  assert.ok(credentialApplies(e, req(), 999));
  assert.ok(!credentialApplies(e, req(), 1000));
});

test('the interceptor: headers for matching requests, none after a replacement or an expiry, a use event without the value', () => {
  let now = 0;
  const events: NodeEvent[] = [];
  const ic = new CredentialInterceptor({ context: () => Promise.reject(new Error('no tls here')) }, (e) => events.push(e), () => now);
  assert.equal(ic.terminates('sbx-a', 'api.example.com', 443), false);
  assert.deepEqual(ic.headers('sbx-a', req()), []);
  ic.set('sbx-a', [cred({ expiresAt: new Date(5000).toISOString() }), cred({ grantId: 'grt-0000000000000002', headerValue: 'Bearer other' })]);
  assert.equal(ic.terminates('sbx-a', 'api.example.com', 443), true);
  assert.equal(ic.terminates('sbx-a', 'other.example.com', 443), false);
  assert.equal(ic.terminates('sbx-b', 'api.example.com', 443), false, 'another sandbox has none');
  assert.deepEqual(ic.headers('sbx-a', req()), [['Authorization', 'Bearer v4lue']], 'one header per name: the first grant');
  assert.deepEqual(ic.headers('sbx-a', req({ host: 'other.example.com' })), []);
  assert.equal(events.length, 1);
  assert.equal(events[0]!.operation, 'secret.use');
  assert.equal(events[0]!.sandboxId, 'sbx-a');
  assert.match(events[0]!.detail, /grant=grt-0000000000000001 secret=TOKEN https:\/\/api.example.com:443 GET \/v1\/x/);
  assert.ok(!JSON.stringify(events).includes('v4lue'));
  now = 5000;
  assert.deepEqual(ic.headers('sbx-a', req()), [['Authorization', 'Bearer other']], 'the expired one is skipped at once');
  ic.set('sbx-a', []);
  assert.deepEqual(ic.headers('sbx-a', req()), []);
  assert.equal(ic.terminates('sbx-a', 'api.example.com', 443), false);
});
