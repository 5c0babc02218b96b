import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { nameOfAuthority, readHost } from './http-head.js';
import { hostileBytes, prefixes } from '../../testing/fuzz-bytes.js';

const head = (s: string) => Buffer.from(s, 'latin1');
const GET = head('GET /x?y=1 HTTP/1.1\r\nHost: A.Test:8080\r\nUser-Agent: curl/8\r\nAccept: */*\r\n\r\n');
const POST = head('POST /upload HTTP/1.1\r\nhost: b.test.\r\ncontent-length: 5\r\n\r\nhello');
const ABSOLUTE = head('GET http://a.test/x HTTP/1.1\r\nHost: a.test\r\n\r\n');

test('the Host of a request head: port and trailing dot dropped, lower-case; need until the head ends', () => {
  assert.deepEqual(readHost(GET), { kind: 'name', name: 'a.test' });
  assert.deepEqual(readHost(POST), { kind: 'name', name: 'b.test' });
  assert.deepEqual(readHost(ABSOLUTE), { kind: 'name', name: 'a.test' });
  const end = GET.indexOf('\r\n\r\n') + 4;
  for (const p of prefixes(GET)) assert.deepEqual(readHost(p), p.length < end ? { kind: 'need' } : { kind: 'name', name: 'a.test' }, `prefix ${p.length}`);
});

test('heads a server could read another destination from are none', () => {
  for (const bad of [
    'GET / HTTP/1.1\r\nHost: a.test\r\nHost: b.test\r\n\r\n', // two Hosts
    'GET / HTTP/1.1\r\nHost : b.test\r\nHost: a.test\r\n\r\n', // space before the colon
    'GET / HTTP/1.1\r\nX: 1\r\n Host: b.test\r\nHost: a.test\r\n\r\n', // a folded line
    'GET http://b.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n', // absolute form naming another host
    'GET / HTTP/1.1\r\nAccept: */*\r\n\r\n', // no Host
    'GET / HTTP/1.1\r\nHost: a..test\r\n\r\n',
    'GET / HTTP/1.1\r\nHost: a.test:80:80\r\n\r\n',
    'GET / HTTP/1.1\r\nHost: user@a.test\r\n\r\n',
    `GET / HTTP/1.1\r\nHost: ${'x'.repeat(64)}.test\r\n\r\n`, // a label no DNS query carries
    '\x16\x03\x01\x00\x00\x01\r\n', // TLS on port 80: refused at the first line, not after 64 KiB
  ]) assert.equal(readHost(head(bad)).kind, 'none', JSON.stringify(bad));
});

test('a Host value: name, name:port, [v6]:port', () => {
  assert.deepEqual(nameOfAuthority('a.test:443'), { kind: 'name', name: 'a.test' });
  assert.equal(nameOfAuthority('[::1]:80').kind, 'none');
  assert.equal(nameOfAuthority('').kind, 'none');
  assert.equal(nameOfAuthority('a.test:x').kind, 'none');
});

test('fuzz: truncated, mutated, oversized and random heads never throw; a name is always one the proxy can check', () => {
  const ascii = fc.string({ unit: fc.constantFrom(...'GETPOSHt:/ .\r\n\tab-[]@1'.split('')), maxLength: 200 }).map(head);
  fc.assert(
    fc.property(fc.oneof(hostileBytes([GET, POST, ABSOLUTE]), ascii), (b) => {
      const r = readHost(b);
      return r.kind === 'need' || r.kind === 'none' || /^[a-z0-9_.-]{1,253}$/.test(r.name);
    }),
    { numRuns: 5000 },
  );
});

test('fuzz: a decision on a prefix is final', () => {
  fc.assert(
    fc.property(hostileBytes([GET, POST, ABSOLUTE]), fc.nat(), (b, cut) => {
      const early = readHost(b.subarray(0, cut % (b.length + 1)));
      if (early.kind !== 'need') assert.deepEqual(readHost(b), early);
    }),
    { numRuns: 3000 },
  );
});
