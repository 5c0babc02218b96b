import { test } from 'node:test';
import assert from 'node:assert/strict';
import { addressAllowed, inCidr, isIpv4, nameVerdict, splitRules } from './domain-rules.js';

const NONE = { denied: false, forced: false };

test('names: exact and *. patterns; allow wins over deny', () => {
  const s = splitRules({ allowOut: ['a.test', '*.ok.sub.test', '198.18.0.2'], denyOut: ['*.sub.test', 'B.test.', '203.0.113.0/24'] });
  assert.deepEqual(s.allowAddrs, ['198.18.0.2']);
  assert.deepEqual(s.denyNames, ['*.sub.test', 'b.test']);
  assert.equal(nameVerdict(s, 'A.TEST.'), 'allow');
  assert.equal(nameVerdict(s, 'x.a.test'), 'neutral');
  assert.equal(nameVerdict(s, 'b.test'), 'deny');
  assert.equal(nameVerdict(s, 'x.sub.test'), 'deny');
  assert.equal(nameVerdict(s, 'sub.test'), 'neutral', 'the apex is not under *.');
  assert.equal(nameVerdict(s, 'y.ok.sub.test'), 'allow');
  assert.equal(nameVerdict(s, 'xsub.test'), 'neutral');
});

test('addresses: an allowed name passes address denials but not private ranges; neutral follows address rules and learned denials', () => {
  const s = splitRules({ allowOut: ['a.test', '198.18.0.2'], denyOut: ['203.0.113.0/24'] });
  assert.equal(inCidr('203.0.113.9', '203.0.113.0/24'), true);
  assert.equal(inCidr('203.0.114.9', '203.0.113.0/24'), false);
  assert.equal(inCidr('1.2.3.4', '0.0.0.0/0'), true);
  assert.equal(addressAllowed(s, '203.0.113.2', 'allow', NONE), true);
  assert.equal(addressAllowed(s, '10.0.0.1', 'allow', NONE), false);
  assert.equal(addressAllowed(s, '198.18.0.2', 'allow', NONE), true);
  assert.equal(addressAllowed(s, '203.0.113.2', 'neutral', NONE), false);
  assert.equal(addressAllowed(s, '8.8.8.8', 'neutral', NONE), true);
  assert.equal(addressAllowed(s, '8.8.8.8', 'neutral', { denied: true, forced: false }), false);
  assert.equal(addressAllowed(s, '8.8.8.8', 'deny', NONE), false);
});

test("a tenant's forced denials win over the sandbox's allows, by name and by address", () => {
  const s = splitRules({ allowOut: ['a.test', '*.sub.test', '203.0.113.0/24'], denyOut: [], forcedDenyOut: ['x.sub.test', 'A.test.', '203.0.113.9/32'] });
  assert.equal(nameVerdict(s, 'a.test'), 'deny');
  assert.equal(nameVerdict(s, 'x.sub.test'), 'deny');
  assert.equal(nameVerdict(s, 'y.sub.test'), 'allow');
  assert.equal(addressAllowed(s, '203.0.113.9', 'allow', NONE), false, 'an allowed name at a forced-denied address');
  assert.equal(addressAllowed(s, '203.0.113.9', 'neutral', NONE), false);
  assert.equal(addressAllowed(s, '203.0.113.8', 'neutral', NONE), true);
  // An address forkd's resolver returned for a forced-denied name: refused before every allow (address or name).
  const learnedForced = { denied: true, forced: true };
  assert.equal(addressAllowed(s, '203.0.113.8', 'neutral', learnedForced), false);
  assert.equal(addressAllowed(s, '203.0.113.8', 'allow', learnedForced), false);
  assert.equal(addressAllowed(splitRules({ allowOut: ['0.0.0.0/0'], denyOut: [] }), '8.8.8.8', 'neutral', learnedForced), false);
});

test('an IPv4 literal is canonical only: leading zeros (octal to getaddrinfo) are not one', () => {
  assert.equal(isIpv4('127.0.0.2'), true);
  assert.equal(isIpv4('0.0.0.0'), true);
  assert.equal(isIpv4('0177.0.0.2'), false);
  assert.equal(isIpv4('127.0.0.02'), false);
  assert.equal(isIpv4('256.0.0.1'), false);
});
