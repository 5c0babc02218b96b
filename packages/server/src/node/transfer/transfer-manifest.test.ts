import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { ForkdError } from '@forkd/protocol';
import { hostileBytes } from '../../testing/fuzz-bytes.js';
import { parseSubvolumeShow } from './subvolume-identity.js';
import { encodeManifest, manifestOrThrow, parseManifest, SnapshotManifest, TemplateExportManifest, TemplateManifest, type SnapshotManifest as Snap, type TemplateExportManifest as Whole } from './transfer-manifest.js';

const sha = (c: string) => c.repeat(64);
const UUID = '3f09e410-1f35-3043-8a89-f912234df7ee';

const valid: Snap = {
  kind: 'forkd-snapshot',
  version: 1,
  snapshot: { id: 'snap-abcdefabcdef', createdAt: '2026-12-03T11:00:00.000Z', frozenMs: 12.5, sizeBytes: 4096, pinned: false, reason: 'pause' },
  sandbox: { id: 'sbx-abcdefabcdef', template: 'base', templateId: 'base', limits: { memoryMb: 256, cpus: 1, pids: 1024, diskMb: 100 }, env: { A: 'b' }, metadata: {}, createdAt: '2026-12-03T10:00:00.000Z', idmap: 231072 },
  template: { name: 'base', id: 'base', uuid: UUID, manifest: `templates/base/${UUID}/manifest.json` },
  rootfs: { size: 30, sha256: sha('a'), chunks: [{ sha256: sha('b'), size: 10 }, { sha256: sha('c'), size: 20 }] },
  images: [{ name: 'pages-1.img', object: { size: 0, sha256: sha('d'), chunks: [] } }],
  exportedAt: '2026-12-03T11:00:01.000Z',
};

const whole: Whole = {
  kind: 'forkd-template-export',
  version: 1,
  template: { name: 'py-warm', id: 'tpl_0123456789ab', uuid: UUID, manifest: `templates/py-warm/${UUID}/manifest.json` },
  createdAt: '2026-12-03T10:00:00.000Z',
  from: 'docker.io/library/python:3.12',
  image: { ref: 'docker.io/library/python:3.12', env: { PATH: '/usr/bin' }, cwd: '/app', user: 'app', shell: ['/bin/sh', '-c'] },
  images: valid.images,
  exportedAt: '2026-12-03T11:00:01.000Z',
};

const bytesOf = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));

test('a manifest round-trips through encode and parse', () => {
  assert.deepEqual(parseManifest(SnapshotManifest, encodeManifest(valid)), { ok: true, value: valid });
  assert.deepEqual(manifestOrThrow(SnapshotManifest, 'k', encodeManifest(valid)), valid);
});

test('hostile manifests are refused with a reason, never thrown', () => {
  const bad: Array<[string, unknown]> = [
    ['an image name with a path', { ...valid, images: [{ ...valid.images[0], name: '../etc/passwd' }] }],
    ['an image name with a slash', { ...valid, images: [{ ...valid.images[0], name: 'a/b' }] }],
    ['a hidden image name', { ...valid, images: [{ ...valid.images[0], name: '.uffd.sock' }] }],
    ['repeated image names', { ...valid, images: [valid.images[0], valid.images[0]] }],
    ['a huge size', { ...valid, rootfs: { ...valid.rootfs, size: 2 ** 53 } }],
    ['sizes that do not add up', { ...valid, rootfs: { ...valid.rootfs, size: 31 } }],
    ['a huge chunk', { ...valid, rootfs: { size: 2 ** 30, sha256: sha('a'), chunks: [{ sha256: sha('b'), size: 2 ** 30 }] } }],
    ['a chunk hash that is a path', { ...valid, rootfs: { ...valid.rootfs, chunks: [{ sha256: '../../x', size: 30 }] } }],
    ['a bad sandbox id', { ...valid, sandbox: { ...valid.sandbox, id: '../sbx' } }],
    ['a bad snapshot id', { ...valid, snapshot: { ...valid.snapshot, id: 'snap-../../x' } }],
    ['a template name with a path', { ...valid, template: { ...valid.template!, name: '../x' } }],
    ['a bad uuid', { ...valid, template: { ...valid.template!, uuid: 'x' } }],
    ['an unknown field', { ...valid, extra: 1 }],
    ['another kind', { ...valid, kind: 'forkd-template' }],
    ['another version', { ...valid, version: 2 }],
    ['limits out of range', { ...valid, sandbox: { ...valid.sandbox, limits: { memoryMb: 1 } } }],
  ];
  for (const [what, v] of bad) {
    const r = parseManifest(SnapshotManifest, bytesOf(v));
    assert.equal(r.ok, false, what);
  }
  assert.deepEqual(parseManifest(SnapshotManifest, new TextEncoder().encode('{"kind":')), { ok: false, error: 'not JSON' });
  assert.equal(parseManifest(SnapshotManifest, new Uint8Array([0xff, 0xfe])).ok, false, 'not UTF-8');
  assert.equal(parseManifest(SnapshotManifest, new Uint8Array(17 * 2 ** 20)).ok, false, 'too big');
  assert.throws(() => manifestOrThrow(SnapshotManifest, 'k', bytesOf({})), (e: unknown) => e instanceof ForkdError && e.code === 'INVALID_ARGUMENT');
  assert.throws(() => manifestOrThrow(SnapshotManifest, 'k', undefined), (e: unknown) => e instanceof ForkdError && e.code === 'NOT_FOUND');
});

test('a whole template\'s manifest round-trips; hostile ones are refused', () => {
  assert.deepEqual(parseManifest(TemplateExportManifest, encodeManifest(whole)), { ok: true, value: whole });
  const bad: Array<[string, unknown]> = [
    ['a template name with a path', { ...whole, template: { ...whole.template, name: '../x' } }],
    ['an image name with a path', { ...whole, images: [{ ...valid.images[0], name: '../etc/passwd' }] }],
    ['an env name that is not one', { ...whole, image: { ...whole.image, env: { 'A=B': 'c' } } }],
    ['a long shell', { ...whole, image: { ...whole.image, shell: ['a', 'b', 'c', 'd', 'e'] } }],
    ['an unknown field', { ...whole, owner: 'acme' }],
    ['a snapshot manifest', valid],
  ];
  for (const [what, v] of bad) assert.equal(parseManifest(TemplateExportManifest, bytesOf(v)).ok, false, what);
});

test('fuzz: any bytes give a typed result; what parses is within bounds', () => {
  const seeds = [Buffer.from(encodeManifest(valid)), Buffer.from(encodeManifest(whole)), Buffer.from(encodeManifest({ kind: 'forkd-template', version: 1, name: 'py', uuid: UUID, parent: valid.template!, rootfs: valid.rootfs, exportedAt: 'x' }))];
  fc.assert(
    fc.property(hostileBytes(seeds, 4096), (b) => {
      for (const schema of [SnapshotManifest, TemplateManifest, TemplateExportManifest] as const) {
        const r = parseManifest(schema, b);
        if (r.ok && 'images' in r.value) for (const f of r.value.images) assert.match(f.name, /^[A-Za-z0-9_-][A-Za-z0-9._-]*$/);
      }
    }),
    { numRuns: 2000 },
  );
});

test('btrfs subvolume show: uuid, received uuid (none: `-`) and the read-only flag', () => {
  const show = (received: string, flags: string) => `tpl\n\tName: \t\t\ttpl\n\tUUID: \t\t\t${UUID}\n\tParent UUID: \t\t-\n\tReceived UUID: \t\t${received}\n\tFlags: \t\t\t${flags}\n`;
  assert.deepEqual(parseSubvolumeShow(show('-', 'readonly')), { uuid: UUID, receivedUuid: undefined, readOnly: true });
  assert.deepEqual(parseSubvolumeShow(show('991beff7-6181-e44d-839f-c94f7d85ec5f', '-')), { uuid: UUID, receivedUuid: '991beff7-6181-e44d-839f-c94f7d85ec5f', readOnly: false });
  assert.throws(() => parseSubvolumeShow('nothing'));
});
