import { test } from 'node:test';
import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { ContextFiles } from '../../node/dockerfile/context-files.js';
import { uploadsContext } from './upload-context.js';

/** A ustar member (what node-tar writes for short names). */
function member(name: string, type: '0' | '1' | '2' | '5', data = '', link = ''): Buffer {
  const h = Buffer.alloc(512);
  h.write(name, 0);
  h.write(type === '5' ? '0000755\0' : '0000644\0', 100);
  h.write('0000000\0', 108);
  h.write('0000000\0', 116);
  h.write(`${Buffer.byteLength(data).toString(8).padStart(11, '0')}\0`, 124);
  h.write('00000000000\0', 136);
  h.write(type, 156);
  h.write(link, 157);
  h.write('ustar\0' + '00', 257);
  h.write('        ', 148);
  let sum = 0;
  for (const b of h) sum += b;
  h.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148);
  const body = Buffer.alloc(Math.ceil(Buffer.byteLength(data) / 512) * 512);
  body.write(data);
  return Buffer.concat([h, body]);
}
const tar = (...members: Buffer[]) => Buffer.concat([...members, Buffer.alloc(1024)]);

test("an upload's files, links and hard links land under its directory, and ContextFiles takes them", async () => {
  const data = gzipSync(tar(member('folder/', '5'), member('folder/test.txt', '0', 'This is a test file.'), member('folder/symlink.txt', '2', '', 'test.txt'), member('folder/hard.txt', '1', '', 'folder/test.txt')));
  const r = await uploadsContext([{ dir: 'files-1', data }, { dir: 'files-2', data: tar(member('./a.txt', '0', 'A')) }]);
  assert.ok(r.ok, r.ok ? '' : r.error);
  const paths = r.value.entries.map((e) => `${e.type}:${e.path}`).sort();
  assert.deepEqual(paths, ['dir:files-1/folder', 'file:files-1/folder/hard.txt', 'file:files-1/folder/test.txt', 'file:files-2/a.txt', 'symlink:files-1/folder/symlink.txt']);
  const files = new ContextFiles(r.value);
  const sel = files.select('files-1/folder/*');
  assert.equal(sel.items.length, 3);
  const test_ = sel.items.find((i) => i.rel === 'test.txt');
  assert.ok(test_?.entry.type === 'file');
  assert.equal(files.blob(test_.entry.sha256).toString(), 'This is a test file.');
});

test('hostile uploads are refused with a reason: climbing out, a dangling hard link, bad gzip, a bomb', async () => {
  const refused: [Buffer, RegExp][] = [
    [tar(member('../etc/passwd', '0', 'x')), /climbs out/],
    [tar(member('a/../../b', '0', 'x')), /climbs out/],
    [tar(member('h', '1', '', 'nope')), /hard link/],
    [Buffer.from([0x1f, 0x8b, 1, 2, 3]), /gzip/],
    [gzipSync(Buffer.alloc(80 * 1024 * 1024)), /larger than/],
  ];
  for (const [data, re] of refused) {
    const r = await uploadsContext([{ dir: 'd', data }]);
    assert.ok(!r.ok && re.test(r.error), r.ok ? 'accepted' : r.error);
  }
});

test('fuzz: any bytes give a result, never a throw', async () => {
  await fc.assert(
    fc.asyncProperty(fc.uint8Array({ maxLength: 4096 }), fc.boolean(), async (bytes, gz) => {
      const b = Buffer.from(bytes);
      const r = await uploadsContext([{ dir: 'd', data: gz ? gzipSync(b) : b }]);
      assert.equal(typeof r.ok, 'boolean');
    }),
    { numRuns: 500 },
  );
  await fc.assert(
    fc.asyncProperty(fc.array(fc.tuple(fc.string({ minLength: 1, maxLength: 40 }), fc.constantFrom('0', '1', '2', '5') as fc.Arbitrary<'0' | '1' | '2' | '5'>, fc.string({ maxLength: 40 })), { maxLength: 6 }), async (ms) => {
      const r = await uploadsContext([{ dir: 'd', data: tar(...ms.map(([n, t, x]) => member(n, t, t === '0' ? x : '', t === '0' ? '' : x))) }]);
      if (r.ok) for (const e of r.value.entries) assert.ok(e.path.startsWith('d/') && !e.path.split('/').includes('..'), e.path);
    }),
    { numRuns: 500 },
  );
});
