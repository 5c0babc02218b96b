import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { canonicalQuery, EMPTY_SHA256, signV4, uriEncode } from './s3-sigv4.js';

// AWS's published examples: the Signature Version 4 test suite (get-vanilla,
// get-vanilla-query-order-key-case) and the S3 API reference's header-based
// authentication examples (GET object, PUT object, GET lifecycle, list).
const SUITE = { creds: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' }, scope: { region: 'us-east-1', service: 'service' }, now: new Date('2015-08-30T12:36:00Z') };
const S3DOC = { creds: { accessKeyId: 'AKIAIOSFODNN7EXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY' }, scope: { region: 'us-east-1', service: 's3' }, now: new Date('2013-05-24T00:00:00Z') };
const S3HOST = 'examplebucket.s3.amazonaws.com';

test('SigV4 test suite: get-vanilla and get-vanilla-query-order-key-case', () => {
  const vanilla = signV4({ method: 'GET', host: 'example.amazonaws.com', path: '/', payloadHash: EMPTY_SHA256 }, SUITE.creds, SUITE.scope, SUITE.now);
  assert.equal(
    vanilla.headers.authorization,
    'AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31',
  );
  assert.equal(vanilla.headers['x-amz-date'], '20150830T123600Z');
  const query = signV4({ method: 'GET', host: 'example.amazonaws.com', path: '/', query: [['Param2', 'value2'], ['Param1', 'value1']], payloadHash: EMPTY_SHA256 }, SUITE.creds, SUITE.scope, SUITE.now);
  assert.equal(query.signature, 'b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500');
});

test('SigV4, S3 API reference examples: GET object with a range, PUT object, GET ?lifecycle, list with a query', () => {
  const get = signV4({ method: 'GET', host: S3HOST, path: '/test.txt', headers: { Range: 'bytes=0-9', 'x-amz-content-sha256': EMPTY_SHA256 }, payloadHash: EMPTY_SHA256 }, S3DOC.creds, S3DOC.scope, S3DOC.now);
  assert.equal(get.stringToSign.split('\n').at(-1), '7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972');
  assert.equal(get.signature, 'f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41');

  const body = 'Welcome to Amazon S3.';
  const hash = createHash('sha256').update(body).digest('hex');
  assert.equal(hash, '44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072');
  const put = signV4(
    { method: 'PUT', host: S3HOST, path: '/test$file.text', headers: { Date: 'Fri, 24 May 2013 00:00:00 GMT', 'x-amz-storage-class': 'REDUCED_REDUNDANCY', 'x-amz-content-sha256': hash }, payloadHash: hash },
    S3DOC.creds, S3DOC.scope, S3DOC.now,
  );
  assert.match(put.canonicalRequest, /^PUT\n\/test%24file\.text\n\n/);
  assert.equal(put.signature, '98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd');

  const s3get = (query: [string, string][]) => signV4({ method: 'GET', host: S3HOST, path: '/', query, headers: { 'x-amz-content-sha256': EMPTY_SHA256 }, payloadHash: EMPTY_SHA256 }, S3DOC.creds, S3DOC.scope, S3DOC.now).signature;
  assert.equal(s3get([['lifecycle', '']]), 'fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543');
  assert.equal(s3get([['prefix', 'J'], ['max-keys', '2']]), '34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7');
  assert.notEqual(s3get([['prefix', 'K'], ['max-keys', '2']]), '34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7');
});

test('SigV4 encoding: only unreserved characters pass; a query sorts by encoded name; a session token is signed', () => {
  assert.equal(uriEncode("a b+c=d/é!'()*~"), 'a%20b%2Bc%3Dd%2F%C3%A9%21%27%28%29%2A~');
  assert.equal(uriEncode('chunks/ab-1.x_y', true), 'chunks/ab-1.x_y');
  assert.equal(canonicalQuery([['prefix', 'a/b'], ['list-type', '2'], ['continuation-token', 'x+y=']]), 'continuation-token=x%2By%3D&list-type=2&prefix=a%2Fb');
  const s = signV4({ method: 'GET', host: 'h', path: '/', payloadHash: EMPTY_SHA256 }, { ...SUITE.creds, sessionToken: 'tok' }, SUITE.scope, SUITE.now);
  assert.equal(s.headers['x-amz-security-token'], 'tok');
  assert.match(s.headers.authorization!, /SignedHeaders=host;x-amz-date;x-amz-security-token,/);
});
