import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { BuildTemplateRequest, formatImageRef, parseImageRef, skopeoImageName } from '@forkd/protocol';

test('registry references: Docker Hub by default, hosts with ports, tags and digests', () => {
  const cases: [string, string][] = [
    ['python:3.12-slim', 'docker.io/library/python:3.12-slim'],
    ['alpine', 'docker.io/library/alpine:latest'],
    ['team/img', 'docker.io/team/img:latest'],
    ['registry.example.com/team/img:tag', 'registry.example.com/team/img:tag'],
    ['127.0.0.1:5000/img:1', '127.0.0.1:5000/img:1'],
    ['localhost/a/b', 'localhost/a/b:latest'],
    ['docker://Quay.IO/org/x:v1', 'quay.io/org/x:v1'],
    [`img@sha256:${'a'.repeat(64)}`, `docker.io/library/img@sha256:${'a'.repeat(64)}`],
    [`r.io/img:t@sha256:${'b'.repeat(64)}`, `r.io/img:t@sha256:${'b'.repeat(64)}`],
    ['oci-archive:/tmp/x.tar', 'oci-archive:/tmp/x.tar'],
    ['docker-archive:/srv/img.tar', 'docker-archive:/srv/img.tar'],
    ['oci:/srv/layout:v2', 'oci:/srv/layout:v2'],
    ['oci:/srv/layout/', 'oci:/srv/layout'],
  ];
  for (const [input, want] of cases) {
    const r = parseImageRef(input);
    assert.ok(r.ok, `${input}: ${!r.ok ? r.error : ''}`);
    assert.equal(formatImageRef(r.ref), want, input);
  }
  const r = parseImageRef('127.0.0.1:5000/img:1');
  assert.ok(r.ok);
  assert.equal(skopeoImageName(r.ref), 'docker://127.0.0.1:5000/img:1');
});

test('refused: other transports, relative or unnormalized paths, bad names, options in disguise', () => {
  for (const bad of [
    '', ' ', 'Python', 'img:', 'img:-x', 'a//b', '-rm', '--src-creds=x', 'dir:/etc', 'containers-storage:x', 'docker-daemon:x', 'http://x/y', 'oci-archive:etc/passwd',
    'oci-archive:/etc/../shadow', 'oci:/a/./b', 'oci-archive:/a//b', 'oci:/a:b:c', 'img@sha256:abc', 'x.io:0/y', 'x.io:99999/y', 'bad_host.io/x', 'a\nb', 'img:tag\u0000', 'x'.repeat(2000),
  ]) {
    assert.equal(parseImageRef(bad).ok, false, JSON.stringify(bad));
  }
});

test('any string: a typed result; what parses formats to a reference that parses to the same', () => {
  const piece = fc.constantFrom('docker://', 'oci:', 'oci-archive:', '/', ':', '@', 'sha256:', 'a'.repeat(64), '..', '.', 'x.io', ':5000', 'lib', '-', '_', '__', 'A', '\n', '');
  const input = fc.oneof(fc.string({ maxLength: 80 }), fc.array(piece, { maxLength: 10 }).map((p) => p.join('')));
  fc.assert(
    fc.property(input, (s) => {
      const r = parseImageRef(s);
      if (!r.ok) return assert.equal(typeof r.error, 'string');
      const again = parseImageRef(formatImageRef(r.ref));
      assert.ok(again.ok);
      assert.deepEqual(again.ref, r.ref);
      // Never an option of skopeo's, never a transport it was not meant to use.
      assert.match(skopeoImageName(r.ref), /^(docker:\/\/[a-z0-9]|oci-archive:\/|docker-archive:\/|oci:\/)/);
    }),
    { numRuns: 5000 },
  );
});

test('the build request: from or fromImage, registryAuth only with a registry image', () => {
  assert.ok(BuildTemplateRequest.safeParse({ name: 'py', fromImage: 'python:3.12-slim' }).success);
  assert.equal(BuildTemplateRequest.safeParse({ name: 'py', fromImage: 'python:3.12-slim', from: 'base' }).success, false);
  assert.equal(BuildTemplateRequest.safeParse({ name: 'py', fromImage: 'Bad Ref' }).success, false);
  assert.ok(BuildTemplateRequest.safeParse({ name: 'py', fromImage: 'r.io/x', registryAuth: { username: 'u', password: 'p' } }).success);
  assert.equal(BuildTemplateRequest.safeParse({ name: 'py', fromImage: 'oci:/x', registryAuth: { username: 'u', password: 'p' } }).success, false);
  assert.equal(BuildTemplateRequest.safeParse({ name: 'py', registryAuth: { username: 'u', password: 'p' } }).success, false);
});
