import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ForkdError, parseImageRef } from '@forkd/protocol';
import { silentLogger } from '../../shared/logger.js';
import { skopeoError } from './skopeo.js';

const failed = (stderr: string) => new ForkdError('INTERNAL', 'skopeo inspect failed', { stderrTail: stderr });

test("a failed pull's code comes from what skopeo said, never from the reference's own digits or words", () => {
  const code = (image: string, stderr: string) => {
    const r = parseImageRef(image);
    assert.ok(r.ok);
    return skopeoError(failed(stderr), { ref: r.ref, logger: silentLogger }).code;
  };
  // A port that holds 403, and one that holds 401: the registry answered "not found".
  assert.equal(code('127.0.0.1:40357/nope:1', 'time="x" level=fatal msg="Error parsing image name \\"docker://127.0.0.1:40357/nope:1\\": reading manifest 1 in 127.0.0.1:40357/nope: manifest unknown: manifest unknown"'), 'NOT_FOUND');
  assert.equal(code('127.0.0.1:34017/team/denied:1', 'reading manifest 1 in 127.0.0.1:34017/team/denied: name unknown'), 'NOT_FOUND');
  assert.equal(code('r.io:5000/x:1', 'reading manifest 1 in r.io:5000/x: unauthorized: authentication required'), 'PERMISSION_DENIED');
  assert.equal(code('r.io:5000/x:1', 'received unexpected HTTP status: 403 Forbidden'), 'PERMISSION_DENIED');
  assert.equal(code('r.io:5000/x:1', 'unexpected HTTP status: 404 Not Found'), 'NOT_FOUND');
  assert.equal(code('r.io:5000/x:1', 'pinging container registry r.io:5000: dial tcp 10.0.0.1:5000: connect: connection refused'), 'UNAVAILABLE');
  assert.equal(code('r.io:5000/x:1', 'something else'), 'INTERNAL');
});
