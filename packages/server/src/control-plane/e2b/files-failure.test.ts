import { test } from 'node:test';
import assert from 'node:assert/strict';
import { gunzipSync } from 'node:zlib';
import { filesFailure } from './files-http.js';

test("an upload body that is not gzip is the client's 400, not the server's 500", () => {
  let err: unknown;
  try {
    gunzipSync(Buffer.from('not gzip at all'));
  } catch (e) {
    err = e;
  }
  assert.deepEqual(filesFailure(err, 'r'), { status: 400, message: 'the body is not valid gzip' });
});
