import { constants } from 'node:fs';
import { lstat, mkdir, open, readdir, realpath, rename, rm, stat, unlink } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { ForkdError } from '@forkd/protocol';
import type { BlobStore } from './blob-store.js';
import { assertBlobKey, assertBlobPrefix } from './blob-key.js';

/**
 * Object files carry this suffix, which no key segment can contain, so key
 * `a` (file `a~`) and key `a/b` (directory `a`, file `b~`) live side by side.
 */
const OBJECT_SUFFIX = '~';
/** Writes land here first (same filesystem, so the rename is atomic); no key segment can be named so. */
const TMP_DIR = '~tmp';
/** Temporary files older than this are left over from a crash; younger ones may be another node's write in progress. */
const STALE_TMP_MS = 24 * 3600_000;

/**
 * A BlobStore in a directory (local disk or a shared mount). Keys map to
 * paths one segment per directory; a write goes to a temporary file, is
 * fsynced and renamed into place (then the directory fsynced), so a reader
 * sees the old object or the new one, never part of one. Nothing is
 * followed through a symbolic link: every directory on a key's path is
 * checked with lstat and the file opened O_NOFOLLOW, so a link planted in
 * the store cannot make it read or write outside its directory.
 */
export class DirBlobStore implements BlobStore {
  private constructor(private readonly root: string) {}

  /** Creates the directory when absent; removes temporary files a crash left behind. */
  static async open(dir: string): Promise<DirBlobStore> {
    await mkdir(join(dir, TMP_DIR), { recursive: true, mode: 0o700 });
    const store = new DirBlobStore(await realpath(dir));
    await store.removeStaleTemporaries();
    return store;
  }

  describe(): string {
    return `dir:${this.root}`;
  }

  async put(key: string, data: Uint8Array): Promise<void> {
    assertBlobKey(key);
    const { dir, file } = this.pathOf(key);
    try {
      await this.makeDirs(key);
      const tmp = join(this.root, TMP_DIR, `${process.pid}-${randomBytes(8).toString('hex')}`);
      const fh = await open(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
      try {
        await fh.writeFile(data);
        await fh.sync();
      } finally {
        await fh.close();
      }
      try {
        await rename(tmp, file);
      } catch (err) {
        await rm(tmp, { force: true });
        throw err;
      }
      await fsyncDir(dir);
    } catch (err) {
      throw fsError('put', key, err);
    }
  }

  async get(key: string): Promise<Uint8Array | undefined> {
    assertBlobKey(key);
    const { file } = this.pathOf(key);
    try {
      if (!(await this.dirsAreReal(key))) return undefined;
      const fh = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW);
      try {
        if (!(await fh.stat()).isFile()) return undefined;
        return new Uint8Array(await fh.readFile());
      } finally {
        await fh.close();
      }
    } catch (err) {
      if (isCode(err, 'ENOENT', 'ENOTDIR', 'ELOOP')) return undefined;
      throw fsError('get', key, err);
    }
  }

  async has(key: string): Promise<boolean> {
    assertBlobKey(key);
    try {
      return (await this.dirsAreReal(key)) && (await lstat(this.pathOf(key).file)).isFile();
    } catch (err) {
      if (isCode(err, 'ENOENT', 'ENOTDIR')) return false;
      throw fsError('has', key, err);
    }
  }

  async delete(key: string): Promise<void> {
    assertBlobKey(key);
    const { dir, file } = this.pathOf(key);
    try {
      if (!(await this.dirsAreReal(key))) return;
      // unlink removes a link itself, never what it points to.
      await unlink(file);
      await fsyncDir(dir);
    } catch (err) {
      if (isCode(err, 'ENOENT', 'ENOTDIR')) return;
      throw fsError('delete', key, err);
    }
  }

  list(prefix: string): AsyncIterable<string> {
    assertBlobPrefix(prefix);
    return this.walk(this.root, '', prefix);
  }

  /** Depth first, entries ordered by the keys they hold, so keys come out in byte order. */
  private async *walk(dir: string, keyDir: string, prefix: string): AsyncGenerator<string> {
    let entries;
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (err) {
      if (isCode(err, 'ENOENT', 'ENOTDIR')) return;
      throw fsError('list', prefix, err);
    }
    const found: { key: string; dir: boolean; name: string }[] = [];
    for (const e of entries) {
      if (e.isFile() && e.name.endsWith(OBJECT_SUFFIX)) {
        const key = keyDir + e.name.slice(0, -OBJECT_SUFFIX.length);
        if (!key.includes(OBJECT_SUFFIX) && key.startsWith(prefix)) found.push({ key, dir: false, name: e.name });
      } else if (e.isDirectory() && !e.name.includes(OBJECT_SUFFIX)) {
        const sub = `${keyDir}${e.name}/`;
        if (sub.startsWith(prefix) || prefix.startsWith(sub)) found.push({ key: sub, dir: true, name: e.name });
      }
      // Anything else (links, sockets, temporaries) is not the store's.
    }
    found.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    for (const f of found) {
      if (f.dir) yield* this.walk(join(dir, f.name), f.key, prefix);
      else yield f.key;
    }
  }

  private pathOf(key: string): { dir: string; file: string } {
    const segments = key.split('/');
    const last = segments.pop()!;
    const dir = join(this.root, ...segments);
    return { dir, file: join(dir, last + OBJECT_SUFFIX) };
  }

  /** Whether every directory on the key's path is a directory, not a link to one (false when one is absent). */
  private async dirsAreReal(key: string): Promise<boolean> {
    let path = this.root;
    for (const seg of key.split('/').slice(0, -1)) {
      path = join(path, seg);
      const st = await lstat(path).catch((err: unknown) => {
        if (isCode(err, 'ENOENT', 'ENOTDIR')) return undefined;
        throw err;
      });
      if (!st?.isDirectory()) return false;
    }
    return true;
  }

  private async makeDirs(key: string): Promise<void> {
    let path = this.root;
    for (const seg of key.split('/').slice(0, -1)) {
      const parent = path;
      path = join(path, seg);
      const created = await mkdir(path, { mode: 0o700 }).then(
        () => true,
        (err: unknown) => {
          if (isCode(err, 'EEXIST')) return false;
          throw err;
        },
      );
      if (created) await fsyncDir(parent);
      else if (!(await lstat(path)).isDirectory()) throw new ForkdError('FAILED_PRECONDITION', `blob store: ${path} is not a directory`);
    }
  }

  private async removeStaleTemporaries(): Promise<void> {
    const tmp = join(this.root, TMP_DIR);
    const st = await lstat(tmp);
    if (!st.isDirectory()) throw new ForkdError('FAILED_PRECONDITION', `blob store: ${tmp} is not a directory`);
    for (const name of await readdir(tmp)) {
      const path = join(tmp, name);
      const age = await stat(path).then((s) => Date.now() - s.mtimeMs, () => 0);
      if (age > STALE_TMP_MS) await rm(path, { force: true });
    }
  }
}

async function fsyncDir(dir: string): Promise<void> {
  const fh = await open(dir, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

function isCode(err: unknown, ...codes: string[]): boolean {
  return codes.includes((err as NodeJS.ErrnoException | null)?.code ?? '');
}

function fsError(op: string, key: string, err: unknown): ForkdError {
  if (err instanceof ForkdError) return err;
  const code = (err as NodeJS.ErrnoException | null)?.code ?? 'EIO';
  const full = code === 'ENOSPC' || code === 'EDQUOT';
  return new ForkdError(full ? 'RESOURCE_EXHAUSTED' : 'UNAVAILABLE', `blob store: ${op} ${JSON.stringify(key)} failed (${code})`, { code }, { cause: err });
}
