import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { hostileBytes } from '../../testing/fuzz-bytes.js';
import { tarOf, type TestTarEntry } from '../../testing/tar-build.js';
import { parsePax, parseTarHeader, tarEntries, type TarEntry, type TarResult } from './tar-reader.js';

async function entriesOf(b: Buffer): Promise<TarResult<TarEntry>[]> {
  const out: TarResult<TarEntry>[] = [];
  const read = async (pos: number, len: number) => b.subarray(pos, pos + len);
  for await (const r of tarEntries(read, b.length)) out.push(r);
  return out;
}

const name = fc.stringMatching(/^[a-z0-9._-]{1,20}(\/[a-z0-9._-]{1,20}){0,8}$/);
const entry: fc.Arbitrary<TestTarEntry> = fc.oneof(
  fc.record({ path: name, type: fc.constant('file' as const), data: fc.string({ maxLength: 700 }), mode: fc.integer({ min: 0, max: 0o7777 }), uid: fc.nat(70000), gid: fc.nat(70000) }),
  fc.record({ path: name, type: fc.constant('dir' as const) }),
  fc.record({ path: name, type: fc.constant('symlink' as const), linkpath: name }),
  fc.record({ path: name, type: fc.constant('hardlink' as const), linkpath: name }),
);

test('archives read back as written: paths (long ones through PAX), types, modes, owners, data', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(entry, { maxLength: 8 }), async (es) => {
      const b = tarOf(es);
      const got = await entriesOf(b);
      assert.equal(got.length, es.length);
      got.forEach((r, i) => {
        assert.ok(r.ok, !r.ok ? r.error : '');
        const e = es[i]!;
        assert.equal(r.value.path, e.path);
        assert.equal(r.value.type, e.type);
        if (e.type === 'file') {
          assert.equal(b.subarray(r.value.dataOffset, r.value.dataOffset + r.value.size).toString(), e.data);
          assert.equal(r.value.mode, e.mode);
          assert.equal(r.value.uid, e.uid);
        }
        if (e.linkpath) assert.equal(r.value.linkpath, e.linkpath);
      });
    }),
    { numRuns: 300 },
  );
});

test('long names: PAX paths beyond the 100-byte field', async () => {
  const long = 'd/'.repeat(80) + 'file';
  const [r] = await entriesOf(tarOf([{ path: long, data: 'x' }]));
  assert.ok(r?.ok && r.value.path === long);
});

test('hostile archives: a typed result for every one, no throw, nothing read past the end', async () => {
  const valid = [tarOf([{ path: 'a', data: 'hello' }, { path: 'b', type: 'dir' }, { path: 'c', type: 'symlink', linkpath: '/etc' }]), tarOf([{ path: 'x/'.repeat(70) + 'y', data: 'z'.repeat(600) }])];
  await fc.assert(
    fc.asyncProperty(hostileBytes(valid, 4096), async (b) => {
      for (const r of await entriesOf(b)) {
        if (!r.ok) continue;
        assert.ok(r.value.dataOffset + r.value.size <= b.length, 'data inside the archive');
        assert.ok(r.value.path.length > 0 && !r.value.path.includes('\0'));
      }
    }),
    { numRuns: 2000 },
  );
});

test('headers and PAX records: checksums, numbers and lengths are checked', () => {
  const good = tarOf([{ path: 'a', data: 'x' }]).subarray(0, 512);
  assert.ok(parseTarHeader(good).ok);
  const flipped = Buffer.from(good);
  flipped[0] = 0x62;
  assert.deepEqual(parseTarHeader(flipped), { ok: false, error: 'tar header checksum mismatch' });
  assert.deepEqual(parseTarHeader(Buffer.alloc(512)), { ok: true, value: 'end' });
  assert.equal(parseTarHeader(Buffer.alloc(100)).ok, false);
  assert.deepEqual(parsePax(Buffer.from('11 path=ab\n')), { ok: true, value: new Map([['path', 'ab']]) });
  for (const bad of ['99 path=ab\n', '0 x=y\n', 'x path=a\n', '10 path=ab', '5 =\n']) assert.equal(parsePax(Buffer.from(bad)).ok, false, bad);
  fc.assert(fc.property(fc.uint8Array({ maxLength: 600 }), (u) => void parsePax(Buffer.from(u))));
  fc.assert(fc.property(fc.uint8Array({ minLength: 512, maxLength: 512 }), (u) => void parseTarHeader(Buffer.from(u))));
});
