import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CreateGrantRequest, grantHostError, parseHeaderTemplate, SecretName, SetSecretRequest } from './secrets.js';

test('header templates: a token name, a value with {secret}, no CR/LF, no framing headers', () => {
  assert.deepEqual(parseHeaderTemplate('Authorization: Bearer {secret}'), { name: 'Authorization', value: 'Bearer {secret}' });
  assert.deepEqual(parseHeaderTemplate('X-Api-Key:{secret}'), { name: 'X-Api-Key', value: '{secret}' });
  assert.match(parseHeaderTemplate('Authorization: Bearer token') as string, /no \{secret\}/);
  assert.match(parseHeaderTemplate('Bad Name: {secret}') as string, /invalid header name/);
  assert.match(parseHeaderTemplate('X: {secret}\r\nEvil: 1') as string, /CR, LF/);
  assert.match(parseHeaderTemplate('{secret}') as string, /Name: value/);
  assert.match(parseHeaderTemplate('Host: {secret}') as string, /cannot be injected/);
});

test('grant hosts: host[:port] or *.suffix[:port], lower-cased', () => {
  assert.equal(grantHostError('api.example.com'), undefined);
  assert.equal(grantHostError('api.example.com:443'), undefined);
  assert.equal(grantHostError('api.example.com:80'), undefined);
  // Only 80 and 443 reach the proxy: a grant for another port would inject nothing, so it is refused.
  assert.match(grantHostError('api.example.com:8443') ?? '', /ports 80 and 443 only/);
  assert.match(grantHostError('api.example.com:8000') ?? '', /ports 80 and 443 only/);
  assert.equal(CreateGrantRequest.safeParse({ secret: 'TOKEN', hosts: ['x.com:8000'], header: 'A: {secret}' }).success, false);
  assert.equal(grantHostError('*.example.com'), undefined);
  assert.ok(grantHostError('api.example.com:99999'));
  assert.ok(grantHostError('*'));
  assert.ok(grantHostError('a b'));
  assert.ok(grantHostError('http://x'));
  const r = CreateGrantRequest.parse({ secret: 'TOKEN', hosts: ['API.Example.com'], methods: ['get'], header: 'Authorization: Bearer {secret}', ttlSeconds: 60 });
  assert.deepEqual(r.hosts, ['api.example.com']);
  assert.deepEqual(r.methods, ['GET']);
  assert.equal(CreateGrantRequest.safeParse({ secret: 'TOKEN', hosts: [], header: 'A: {secret}' }).success, false);
  assert.equal(CreateGrantRequest.safeParse({ secret: 'TOKEN', hosts: ['x.com'], header: 'A: {secret}', ttlSeconds: 0 }).success, false);
});

test('secret names and values: a value that could split a header is refused, without echoing it', () => {
  assert.equal(SecretName.safeParse('OPENAI_API_KEY').success, true);
  assert.equal(SecretName.safeParse('9lives').success, false);
  assert.equal(SecretName.safeParse('a/b').success, false);
  const r = SetSecretRequest.safeParse({ value: 'abc\r\nX-Evil: 1' });
  assert.equal(r.success, false);
  assert.ok(!JSON.stringify(r.error?.issues).includes('X-Evil'));
  assert.equal(SetSecretRequest.safeParse({ value: '' }).success, false);
});
