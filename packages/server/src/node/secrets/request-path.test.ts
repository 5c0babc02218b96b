import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { normalizeTarget } from './request-path.js';

test('a target normalizes to its decoded path and query; an ambiguous one has no form', () => {
  assert.deepEqual(normalizeTarget('/v1/chat?x=1'), { path: '/v1/chat', query: 'x=1' });
  assert.deepEqual(normalizeTarget('/%61llowed/x'), { path: '/allowed/x', query: undefined });
  assert.deepEqual(normalizeTarget('/v1/'), { path: '/v1/', query: undefined });
  assert.deepEqual(normalizeTarget('/'), { path: '/', query: undefined });
  assert.deepEqual(normalizeTarget('/a?../b'), { path: '/a', query: '../b' }, 'the query is not path');
  const ambiguous = [
    '/allowed/../private', '/allowed/./x', '/allowed/%2e%2e/private', '/allowed/%2E%2e/private', '/allowed/.%2e/private', '/allowed/%2e/x',
    '/allowed%2f..%2fprivate', '/allowed%2F..%2Fprivate', '/allowed\\..\\private', '/allowed%5c..%5cprivate', '/allowed//x', '//allowed',
    '/allowed;/../private', '/allowed/..;/private', '/allowed%3b/x', '/allowed%252e%252e/x', '/allowed%00', '/allowed/%', '/allowed/%zz',
    '/allowed/%c0%ae%c0%ae/private', '/allowed/\t', 'allowed', 'http://a.test/allowed', '*', '', '/a#b',
  ];
  for (const t of ambiguous) assert.equal(normalizeTarget(t), undefined, t);
});

test('normalization never throws; what it returns has no dot, empty or separator-bearing segment and is stable (property)', () => {
  const seg = fc.oneof(fc.constantFrom('.', '..', '', '%2e', '%2E%2e', '%2f', '%5c', ';', '%25', 'a', 'v1', '%61', '\\', '%00', '%c0%ae'), fc.string({ maxLength: 6 }));
  const target = fc.tuple(fc.array(seg, { maxLength: 8 }), fc.option(fc.string({ maxLength: 8 }))).map(([s, q]) => '/' + s.join('/') + (q === null ? '' : `?${q}`));
  fc.assert(
    fc.property(fc.oneof(target, fc.string({ maxLength: 40 })), (t) => {
      const n = normalizeTarget(t);
      if (!n) return true;
      const segs = n.path.slice(1).split('/');
      assert.ok(segs.every((s, i) => s !== '.' && s !== '..' && (s !== '' || i === segs.length - 1)), t);
      assert.ok(!/[\\;%\0]/.test(n.path), t);
      // Stable: what an upstream decodes once more is what was matched (no % left to decode).
      assert.deepEqual(normalizeTarget(n.path.split('/').map((s) => encodeURIComponent(s)).join('/')), { path: n.path, query: undefined }, t);
      return true;
    }),
    { numRuns: 5000 },
  );
});
