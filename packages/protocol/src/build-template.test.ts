import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BuildTemplateRequest } from './sandbox.js';

const ok = (r: unknown) => BuildTemplateRequest.safeParse(r).success;

test('build requests: Debian package names, ready with start, apt packages not with images', () => {
  assert.ok(ok({ name: 'ci', aptPackages: ['python3-pandas', 'libstdc++6', 'g++', 'python3.11'], shared: true }));
  for (const bad of ['-oDir=/', 'Python3', 'a', 'x y', 'x;y', '../x', '', 'p'.repeat(101)]) assert.ok(!ok({ name: 'ci', aptPackages: [bad] }), bad);
  assert.ok(!ok({ name: 'ci', aptPackages: Array.from({ length: 201 }, (_, i) => `p${i}`) }), 'at most 200');
  assert.ok(!ok({ name: 'ci', aptPackages: ['curl'], fromImage: 'alpine:3' }), "the host's release is not the image's");
  assert.ok(ok({ name: 'web', start: 'python3 -m http.server', ready: 'curl -sf localhost:8000' }));
  assert.ok(!ok({ name: 'web', ready: 'true' }), 'ready without a start command');
  assert.ok(ok({ name: 'web', fromImage: 'nginx:1', ready: 'true' }), "an image's Entrypoint is its start");
  assert.ok(!ok({ name: 'web', shared: 'yes' }));
});
