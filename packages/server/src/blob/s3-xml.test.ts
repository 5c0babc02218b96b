import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { hostileBytes } from '../testing/fuzz-bytes.js';
import { parseListObjectsV2, parseS3ErrorCode, parseXml } from './s3-xml.js';

const escape = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

function listXml(keys: string[], next?: string): string {
  return (
    '<?xml version="1.0" encoding="UTF-8"?>\n<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name><Prefix></Prefix>' +
    `<KeyCount>${keys.length}</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>${next !== undefined}</IsTruncated>` +
    keys.map((k) => `<Contents><Key>${escape(k)}</Key><LastModified>2026-01-01T00:00:00.000Z</LastModified><ETag>&quot;x&quot;</ETag><Size>1</Size></Contents>`).join('') +
    (next !== undefined ? `<NextContinuationToken>${escape(next)}</NextContinuationToken>` : '') +
    '</ListBucketResult>'
  );
}

test('S3 XML: a ListObjectsV2 page and an error document', () => {
  assert.deepEqual(parseListObjectsV2(listXml(['a', 'b/c'])), { ok: true, value: { keys: ['a', 'b/c'] } });
  assert.deepEqual(parseListObjectsV2(listXml(['x'], '1/+=')), { ok: true, value: { keys: ['x'], next: '1/+=' } });
  assert.deepEqual(parseListObjectsV2('<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key><![CDATA[a&b]]></Key></Contents></ListBucketResult>'), { ok: true, value: { keys: ['a&b'] } });
  assert.equal(parseListObjectsV2('<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>').ok, false, 'truncated without a token');
  assert.equal(parseListObjectsV2('<Error><Code>NoSuchBucket</Code></Error>').ok, false);
  assert.equal(parseS3ErrorCode('<?xml version="1.0"?><Error><Code>SignatureDoesNotMatch</Code><Message>m</Message></Error>'), 'SignatureDoesNotMatch');
  assert.equal(parseS3ErrorCode('<Error><Code>a b</Code></Error>'), undefined);
});

test('S3 XML: DTDs, unknown entities, mismatched tags, deep nesting and stray text are refused', () => {
  const bad = [
    '<!DOCTYPE x [<!ENTITY a "aaaa">]><x>&a;</x>',
    '<x>&foo;</x>',
    '<x>&#0;</x>',
    '<x>&#xD800;</x>',
    '<x>a & b</x>',
    '<x></y>',
    '<x>',
    '</x>',
    '<x/><y/>',
    'text<x/>',
    '<1x/>',
    '<a>'.repeat(40) + '</a>'.repeat(40),
    '',
  ];
  for (const b of bad) assert.equal(parseXml(b).ok, false, b.slice(0, 40));
  assert.deepEqual(parseXml('<s3:x a=\'1\' b="2"><!-- c --><y/>t&#65;&#x42;&lt;</s3:x>'), { ok: true, value: { name: 'x', children: [{ name: 'y', children: [], text: '' }], text: 'tAB<' } });
});

test('S3 XML (property): any input gives a typed result, never a throw; generated pages round-trip', () => {
  const key = fc.string({ unit: 'binary', maxLength: 30 }).filter((s) => !/[\u0000-\u0008\u000b\u000c\u000e-\u001f\ud800-\udfff\ufffe\uffff]/.test(s) && s.trim() === s && s.length > 0);
  fc.assert(
    fc.property(fc.array(key, { maxLength: 20 }), fc.option(key, { nil: undefined }), (keys, next) => {
      const r = parseListObjectsV2(listXml(keys, next));
      assert.deepEqual(r, { ok: true, value: next === undefined ? { keys } : { keys, next } });
    }),
    { numRuns: 500 },
  );
  const valid = [listXml(['a', 'b'], 'tok'), listXml([]), '<Error><Code>NoSuchKey</Code></Error>'].map((s) => Buffer.from(s));
  fc.assert(
    fc.property(fc.oneof(hostileBytes(valid).map((b) => b.toString('latin1')), fc.string({ unit: 'binary' }), fc.string({ unit: fc.constantFrom('<', '>', '/', '&', ';', '!', '?', '[', ']', 'a', '-', '"', ' ', '#', 'x') })), (src) => {
      const r = parseXml(src);
      assert.equal(typeof r.ok, 'boolean');
      parseListObjectsV2(src);
      parseS3ErrorCode(src);
    }),
    { numRuns: 3000 },
  );
});
