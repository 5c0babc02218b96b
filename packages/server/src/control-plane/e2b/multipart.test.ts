import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { boundaryOf, multipartParts } from './multipart.js';

async function* chunked(b: Buffer, size: number): AsyncGenerator<Buffer> {
  for (let i = 0; i < b.length; i += size) yield b.subarray(i, i + size);
}

async function collect(src: AsyncIterable<Buffer>, boundary: string, skip: string[] = []) {
  const out: { name: string; filename: string | undefined; data: Buffer }[] = [];
  for await (const p of multipartParts(src, boundary)) {
    if (skip.includes(p.name)) {
      out.push({ name: p.name, filename: p.filename, data: Buffer.alloc(0) });
      continue;
    }
    const parts: Buffer[] = [];
    for await (const c of p.body) parts.push(c);
    out.push({ name: p.name, filename: p.filename, data: Buffer.concat(parts) });
  }
  return out;
}

test('parts stream out whatever the chunk boundaries, bodies byte-exact', async () => {
  const bin = randomBytes(200_000);
  const form = new FormData();
  form.append('file', new Blob([bin]), '/0/a.bin');
  form.append('note', 'ignored');
  form.append('file', new Blob(['hello\r\n--not-a-boundary']), 'b "q".txt');
  const req = new Request('http://x/', { method: 'POST', body: form });
  const ct = req.headers.get('content-type')!;
  const body = Buffer.from(await req.arrayBuffer());
  const boundary = boundaryOf(ct)!;
  assert.ok(boundary);
  for (const size of [1, 7, 1000, body.length]) {
    const got = await collect(chunked(body, size), boundary, size === 7 ? ['note'] : []);
    assert.deepEqual(got.map((p) => p.name), ['file', 'note', 'file']);
    assert.equal(got[0]!.filename, '/0/a.bin');
    assert.equal(got[1]!.filename, undefined);
    assert.match(got[2]!.filename ?? '', /^b .*q.*\.txt$/);
    assert.equal(got[0]!.data.equals(bin), true);
    assert.equal(got[2]!.data.toString(), 'hello\r\n--not-a-boundary');
    if (size !== 7) assert.equal(got[1]!.data.toString(), 'ignored');
  }
});

test('a truncated body is an error', async () => {
  const body = Buffer.from('--b\r\ncontent-disposition: form-data; name="file"; filename="x"\r\n\r\nabc');
  await assert.rejects(collect(chunked(body, 4), 'b'), /ends early/);
  await assert.rejects(collect(chunked(Buffer.from('nothing'), 4), 'b'), /no multipart boundary/);
});
