/**
 * A reader of the tar archives image layers are (ustar, GNU long names, PAX
 * records): hostile bytes from any registry, so every field is checked and
 * every failure is a typed result, never an exception or a wrong entry.
 */
export type TarEntryType = 'file' | 'hardlink' | 'symlink' | 'char' | 'block' | 'dir' | 'fifo';

export interface TarEntry {
  type: TarEntryType;
  /** As archived (not cleaned: see layer-paths.ts). */
  path: string;
  linkpath: string;
  mode: number;
  uid: number;
  gid: number;
  /** Seconds since the epoch. */
  mtime: number;
  size: number;
  /** Where the entry's data starts in the archive. */
  dataOffset: number;
}

export type TarResult<T> = { ok: true; value: T } | { ok: false; error: string };

const BLOCK = 512;
/** PAX records and GNU long names: far more than any real path needs, little enough to hold. */
const META_MAX = 1 << 20;
const PATH_MAX = 4096;
const TYPES: Record<string, TarEntryType> = { '0': 'file', '\0': 'file', '7': 'file', '1': 'hardlink', '2': 'symlink', '3': 'char', '4': 'block', '5': 'dir', '6': 'fifo' };

/** A header block as it stands, before PAX or GNU records apply. */
export interface RawHeader {
  typeflag: string;
  name: string;
  linkname: string;
  mode: number;
  uid: number;
  gid: number;
  size: number;
  mtime: number;
}

const bad = (error: string): { ok: false; error: string } => ({ ok: false, error });

function cstr(b: Buffer, start: number, len: number): string {
  const s = b.subarray(start, start + len);
  const end = s.indexOf(0);
  return s.subarray(0, end < 0 ? s.length : end).toString('utf8');
}

/** Octal ASCII (space or NUL ended) or GNU base-256; undefined when neither. */
export function tarNumber(b: Buffer, start: number, len: number): number | undefined {
  const f = b.subarray(start, start + len);
  if (f.length === 0) return undefined;
  if (f[0]! & 0x80) {
    if (f[0] === 0xff) return undefined; // negative
    let n = f[0]! & 0x7f;
    for (let i = 1; i < f.length; i++) {
      n = n * 256 + f[i]!;
      if (n > Number.MAX_SAFE_INTEGER) return undefined;
    }
    return n;
  }
  const s = f.toString('latin1').replace(/[\0 ]+$/, '').replace(/^ +/, '');
  if (s === '') return 0;
  if (!/^[0-7]{1,22}$/.test(s)) return undefined;
  const n = parseInt(s, 8);
  return Number.isSafeInteger(n) ? n : undefined;
}

/** One 512-byte header: 'end' for a zero block. */
export function parseTarHeader(b: Buffer): TarResult<RawHeader | 'end'> {
  if (b.length !== BLOCK) return bad('truncated tar header');
  if (b.every((x) => x === 0)) return { ok: true, value: 'end' };
  const sum = tarNumber(b, 148, 8);
  let expect = 0;
  for (let i = 0; i < BLOCK; i++) expect += i >= 148 && i < 156 ? 32 : b[i]!;
  if (sum !== expect) return bad('tar header checksum mismatch');
  const nums = [tarNumber(b, 100, 8), tarNumber(b, 108, 8), tarNumber(b, 116, 8), tarNumber(b, 124, 12), tarNumber(b, 136, 12)];
  if (nums.some((n) => n === undefined)) return bad('tar header has an invalid number');
  const [mode, uid, gid, size, mtime] = nums as number[];
  const ustar = b.subarray(257, 262).toString('latin1') === 'ustar';
  const prefix = ustar ? cstr(b, 345, 155) : '';
  const name = cstr(b, 0, 100);
  return { ok: true, value: { typeflag: String.fromCharCode(b[156]!), name: prefix ? `${prefix}/${name}` : name, linkname: cstr(b, 157, 100), mode: mode! & 0o7777, uid: uid!, gid: gid!, size: size!, mtime: mtime! } };
}

/** PAX extended header records (`LEN key=value\n`...). */
export function parsePax(data: Buffer): TarResult<Map<string, string>> {
  const out = new Map<string, string>();
  let pos = 0;
  while (pos < data.length) {
    if (data[pos] === 0) break; // padding some writers leave
    const sp = data.indexOf(0x20, pos);
    if (sp < 0 || sp - pos > 8) return bad('invalid PAX record length');
    const lenText = data.subarray(pos, sp).toString('latin1');
    if (!/^[1-9][0-9]*$/.test(lenText)) return bad('invalid PAX record length');
    const len = Number(lenText);
    if (pos + len > data.length || len <= sp - pos + 1 || data[pos + len - 1] !== 0x0a) return bad('invalid PAX record');
    const rec = data.subarray(sp + 1, pos + len - 1).toString('utf8');
    const eq = rec.indexOf('=');
    if (eq <= 0) return bad('invalid PAX record');
    out.set(rec.slice(0, eq), rec.slice(eq + 1));
    pos += len;
  }
  return { ok: true, value: out };
}

function paxNumber(v: string | undefined, fallback: number): number | undefined {
  if (v === undefined) return fallback;
  // mtime may carry a fraction; sizes and ids are whole.
  if (!/^[0-9]{1,16}(\.[0-9]{1,9})?$/.test(v)) return undefined;
  const n = Math.floor(Number(v));
  return Number.isSafeInteger(n) ? n : undefined;
}

/** Reads `len` bytes at `pos` (fewer only at the end of the archive). */
export type ReadAt = (pos: number, len: number) => Promise<Buffer>;

/**
 * The entries of an archive of `total` bytes, in order. Yields one failed
 * result and stops at the first malformed block.
 */
export async function* tarEntries(read: ReadAt, total: number): AsyncGenerator<TarResult<TarEntry>> {
  let pos = 0;
  let pax = new Map<string, string>();
  let longName: string | undefined;
  let longLink: string | undefined;
  while (pos + BLOCK <= total) {
    const h = parseTarHeader(await read(pos, BLOCK));
    if (!h.ok) return yield h;
    if (h.value === 'end') return;
    const raw = h.value;
    const dataOffset = pos + BLOCK;
    const padded = Math.ceil(raw.size / BLOCK) * BLOCK;
    if (dataOffset + raw.size > total) return yield bad('tar entry runs past the end of the layer');
    pos = dataOffset + padded;
    if (raw.typeflag === 'x' || raw.typeflag === 'g' || raw.typeflag === 'L' || raw.typeflag === 'K') {
      if (raw.size > META_MAX) return yield bad('tar metadata record too large');
      const data = await read(dataOffset, raw.size);
      if (raw.typeflag === 'g') continue; // global records: nothing in them matters to a root filesystem
      if (raw.typeflag === 'x') {
        const p = parsePax(data);
        if (!p.ok) return yield p;
        pax = p.value;
      } else {
        const end = data.indexOf(0);
        const text = data.subarray(0, end < 0 ? data.length : end).toString('utf8');
        if (raw.typeflag === 'L') longName = text;
        else longLink = text;
      }
      continue;
    }
    const type = TYPES[raw.typeflag];
    if (!type) return yield bad(`unsupported tar entry type ${JSON.stringify(raw.typeflag)}`);
    const path = pax.get('path') ?? longName ?? raw.name;
    const linkpath = pax.get('linkpath') ?? longLink ?? raw.linkname;
    const size = paxNumber(pax.get('size'), raw.size);
    const uid = paxNumber(pax.get('uid'), raw.uid);
    const gid = paxNumber(pax.get('gid'), raw.gid);
    const mtime = paxNumber(pax.get('mtime'), raw.mtime);
    pax = new Map();
    longName = longLink = undefined;
    if (size === undefined || uid === undefined || gid === undefined || mtime === undefined) return yield bad('invalid number in a PAX record');
    if (path.length === 0 || path.length > PATH_MAX || linkpath.length > PATH_MAX || path.includes('\0') || linkpath.includes('\0')) return yield bad('invalid path in a tar entry');
    // A PAX size overrides the header's: the data's extent follows it.
    const realSize = type === 'file' ? size : 0;
    if (size !== raw.size) {
      pos = dataOffset + Math.ceil(size / BLOCK) * BLOCK;
      if (dataOffset + size > total) return yield bad('tar entry runs past the end of the layer');
    }
    yield { ok: true, value: { type, path, linkpath, mode: raw.mode, uid, gid, mtime, size: realSize, dataOffset } };
  }
}
