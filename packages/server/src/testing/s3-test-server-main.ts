/**
 * The S3 test server's process (started by s3-test-server.ts with
 * --openssl-legacy-provider: s3rver's continuation tokens use DES). s3rver
 * lists keys in directory order and writes objects in place, where S3 lists
 * in byte order and replaces an object whole; three patches give it S3's
 * behaviour, so the conformance suite checks forkd's client against what S3
 * does, not against this server's shortcuts. Signature checking is
 * s3rver's own. Argv: directory, bucket, access key id; the secret comes on
 * stdin. Prints `{"port":N}` when listening; exits when stdin closes.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream, readdirSync, statSync } from 'node:fs';
import { readFile, rename, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { posix } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';

const require = createRequire(import.meta.url);
type Walk = (dir: string, filter?: (dir: string) => boolean) => Generator<string>;
interface Store {
  getResourcePath(bucket: string, key: string, resource: string): string;
  getMetadata(bucket: string, key: string): Promise<Record<string, unknown>>;
}
type ObjectCtor = new (bucket: string, key: string, content: unknown, metadata: Record<string, unknown>) => unknown;

/** Entries in the order of the keys they hold (a directory `a` holds `a/...`), so listings come out in byte order. */
function* sortedWalk(dir: string, filter?: (dir: string) => boolean): Generator<string> {
  const entries: { path: string; dir: boolean; order: string }[] = [];
  for (const name of readdirSync(dir)) {
    const path = posix.join(dir, name);
    let isDir: boolean;
    try {
      isDir = statSync(path).isDirectory();
    } catch {
      continue; // a temporary renamed away meanwhile
    }
    entries.push({ path, dir: isDir, order: isDir ? `${name}/` : name.replace(/\._S3rver_.*$/, '') });
  }
  entries.sort((a, b) => (a.order < b.order ? -1 : a.order > b.order ? 1 : 0));
  for (const e of entries) {
    if (!e.dir) yield e.path;
    else if (!filter || filter(e.path)) yield* sortedWalk(e.path, filter);
  }
}

function patch(): void {
  (require('@20minutes/s3rver/lib/utils') as { walk: Walk }).walk = sortedWalk;
  const FilesystemStore = require('@20minutes/s3rver/lib/stores/filesystem') as { prototype: Record<string, unknown> };
  const S3Object = require('@20minutes/s3rver/lib/models/object') as ObjectCtor;
  // Whole or nothing: a temporary file renamed over the object.
  FilesystemStore.prototype.putContent = async (objectPath: string, content: Buffer | Readable): Promise<[number, string]> => {
    const tmp = `${objectPath}.tmp-${randomBytes(6).toString('hex')}`;
    const md5 = createHash('md5');
    let size = 0;
    const count = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        md5.update(chunk);
        size += chunk.length;
        cb(null, chunk);
      },
    });
    try {
      if (Buffer.isBuffer(content)) await pipeline(Readable.from([content]), count, createWriteStream(tmp));
      else await pipeline(content, count, createWriteStream(tmp));
      await rename(tmp, objectPath);
    } catch (err) {
      await rm(tmp, { force: true });
      throw err;
    }
    return [size, md5.digest('hex')];
  };
  // One open of the file: the bytes of one version, with its own length.
  FilesystemStore.prototype.getObject = async function (this: Store, bucket: string, key: string, options?: { start?: number; end?: number }) {
    if (options && (options.start !== undefined || options.end)) throw new Error('ranges: not in this test server');
    let data: Buffer;
    let metadata: Record<string, unknown>;
    try {
      data = await readFile(this.getResourcePath(bucket, key, 'object'));
      metadata = await this.getMetadata(bucket, key);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
    return new S3Object(bucket, key, Readable.from([data]), { ...metadata, 'content-length': data.length });
  };
}

async function main(): Promise<void> {
  const [dir, bucket, accessKeyId] = process.argv.slice(2);
  if (!dir || !bucket || !accessKeyId) throw new Error('usage: s3-test-server-main DIR BUCKET ACCESS_KEY_ID < secret');
  const chunks: Buffer[] = [];
  for await (const c of process.stdin.iterator({ destroyOnReturn: false })) {
    chunks.push(c as Buffer);
    if (Buffer.concat(chunks).includes(10)) break;
  }
  const secret = Buffer.concat(chunks).toString('utf8').split('\n')[0]!;
  patch();
  const S3rver = require('@20minutes/s3rver') as new (o: Record<string, unknown>) => { run(): Promise<AddressInfo>; close(): Promise<void> };
  const accounts = require('@20minutes/s3rver/lib/models/account') as { DUMMY_ACCOUNT: { createKeyPair(id: string, secret: string): void } };
  accounts.DUMMY_ACCOUNT.createKeyPair(accessKeyId, secret);
  const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory: dir, configureBuckets: [{ name: bucket }], vhostBuckets: true, serviceEndpoint: 'localhost' });
  const { port } = await server.run();
  process.stdout.write(`${JSON.stringify({ port })}\n`);
  process.stdin.on('end', () => void server.close().finally(() => process.exit(0)));
  process.stdin.resume();
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
