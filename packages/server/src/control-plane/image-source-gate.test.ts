import { test } from 'node:test';
import assert from 'node:assert/strict';
import { imageSourceRefusal } from './image-source-gate.js';

test('tenants pull from public registries only; admin keys from files and internal registries too', () => {
  for (const ok of ['python:3.12-slim', 'registry.example.com/team/img:tag', '203.0.113.7:5000/x', 'ghcr.io/o/i@sha256:' + 'a'.repeat(64)]) assert.equal(imageSourceRefusal(ok, false), undefined, ok);
  for (const bad of ['oci-archive:/etc/shadow', 'docker-archive:/root/x.tar', 'oci:/var/lib/forkd:x', '127.0.0.1:5000/img:1', 'localhost:5000/x', '169.254.169.254/latest', '10.1.2.3/x', '192.168.1.1:443/y', 'a.localhost/x']) {
    assert.ok(imageSourceRefusal(bad, false), bad);
    assert.equal(imageSourceRefusal(bad, true), undefined, bad);
  }
});
