import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { hostileBytes } from '../../testing/fuzz-bytes.js';
import { parseImageConfig, parseManifest, parsePullSize } from './image-config.js';

const D = (c: string) => `sha256:${c.repeat(64)}`;
const CONFIG = JSON.stringify({
  architecture: 'amd64',
  os: 'linux',
  config: { Env: ['PATH=/usr/bin:/bin', 'A=b=c'], Entrypoint: ['/bin/sh', '-c'], Cmd: ['echo hi'], WorkingDir: '/app', User: 'app:staff' },
  rootfs: { type: 'layers', diff_ids: [D('a'), D('b')] },
});
const MANIFEST = JSON.stringify({ schemaVersion: 2, config: { digest: D('c'), size: 163 }, layers: [{ digest: D('a'), size: 2_000_000, mediaType: 'x' }, { digest: D('b'), size: 500 }] });
const INDEX = JSON.stringify({
  schemaVersion: 2,
  manifests: [
    { digest: D('e'), platform: { os: 'linux', architecture: 'arm64' } },
    { digest: D('f'), platform: { os: 'linux', architecture: 'amd64' } },
  ],
});

test("an image's config: its layers and the defaults its sandboxes get", () => {
  const r = parseImageConfig(CONFIG);
  assert.ok(r.ok);
  assert.deepEqual(r.value, {
    diffIds: [D('a'), D('b')],
    defaults: { env: { PATH: '/usr/bin:/bin', A: 'b=c' }, cwd: '/app', user: 'app', start: ['/bin/sh', '-c', 'echo hi'], entrypoint: ['/bin/sh', '-c'], cmd: ['echo hi'] },
  });
  const bad = (patch: object) => parseImageConfig(JSON.stringify({ ...JSON.parse(CONFIG), ...patch }));
  assert.match(String((bad({ architecture: 'arm64' }) as { error: string }).error), /linux\/amd64/);
  assert.equal(bad({ rootfs: { type: 'layers', diff_ids: [] } }).ok, false);
  assert.equal(bad({ config: { WorkingDir: 'relative' } }).ok, false);
  assert.equal(bad({ config: { User: '../root' } }).ok, false);
  assert.equal(bad({ config: { Cmd: ['a\u0000b'] } }).ok, false);
  assert.equal(parseImageConfig('not json').ok, false);
});

test("a pull's size: a manifest's blobs; an index points at its linux/amd64 manifest", () => {
  assert.deepEqual(parsePullSize(MANIFEST), { ok: true, value: { kind: 'bytes', bytes: 2_000_663 } });
  assert.deepEqual(parsePullSize(INDEX), { ok: true, value: { kind: 'index', amd64: D('f') } });
  assert.deepEqual(parsePullSize(JSON.stringify({ manifests: [{ digest: D('e') }] })), { ok: true, value: { kind: 'index', amd64: undefined } });
  for (const bad of ['', '{}', '[]', 'null', JSON.stringify({ config: { size: -1 }, layers: [] }), JSON.stringify({ config: { size: 1.5 }, layers: [] }), JSON.stringify({ config: { size: 1 }, layers: [{ size: 2 ** 50 }] })]) {
    assert.equal(parsePullSize(bad).ok, false, bad);
  }
  assert.ok(parseManifest(MANIFEST).ok);
});

// The registry, the image's author and anyone on the path write these bytes.
test('image config, manifest and pull size parsers: hostile bytes give a typed result, never a throw', () => {
  const valid = [CONFIG, MANIFEST, INDEX].map((s) => Buffer.from(s));
  fc.assert(
    fc.property(hostileBytes(valid), (b) => {
      const text = b.toString('utf8');
      for (const r of [parseImageConfig(text), parseManifest(text), parsePullSize(text)]) {
        assert.equal(typeof r.ok, 'boolean');
        if (!r.ok) assert.equal(typeof r.error, 'string');
      }
      const size = parsePullSize(text);
      if (size.ok && size.value.kind === 'bytes') assert.ok(Number.isSafeInteger(size.value.bytes) && size.value.bytes >= 0);
    }),
    { numRuns: 3000 },
  );
});
