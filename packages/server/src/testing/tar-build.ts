/**
 * Writes ustar archives for tests (image layers made offline, hostile ones
 * included): what no ordinary tar tool will write, such as `../` paths.
 */
export interface TestTarEntry {
  path: string;
  type?: 'file' | 'dir' | 'symlink' | 'hardlink' | 'char' | 'fifo';
  data?: Buffer | string;
  linkpath?: string;
  mode?: number;
  uid?: number;
  gid?: number;
}

const TYPEFLAG = { file: '0', hardlink: '1', symlink: '2', char: '3', dir: '5', fifo: '6' } as const;

function octal(n: number, len: number): string {
  return n.toString(8).padStart(len - 1, '0') + '\0';
}

function header(name: string, typeflag: string, size: number, e: TestTarEntry): Buffer {
  const b = Buffer.alloc(512);
  b.write(name, 0, 100, 'utf8');
  b.write(octal(e.mode ?? (typeflag === '5' ? 0o755 : 0o644), 8), 100, 'latin1');
  b.write(octal(e.uid ?? 0, 8), 108, 'latin1');
  b.write(octal(e.gid ?? 0, 8), 116, 'latin1');
  b.write(octal(size, 12), 124, 'latin1');
  b.write(octal(1_700_000_000, 12), 136, 'latin1');
  b.write(typeflag, 156, 'latin1');
  b.write(e.linkpath ?? '', 157, 100, 'utf8');
  b.write('ustar\x0000', 257, 'latin1');
  b.fill(32, 148, 156);
  let sum = 0;
  for (const x of b) sum += x;
  b.write(octal(sum, 7) + ' ', 148, 'latin1');
  return b;
}

function pad(data: Buffer): Buffer {
  const rest = data.length % 512;
  return rest ? Buffer.concat([data, Buffer.alloc(512 - rest)]) : data;
}

function paxRecord(key: string, value: string): string {
  const body = ` ${key}=${value}\n`;
  let len = body.length + 1;
  while (String(len).length + body.length !== len) len = String(len).length + body.length;
  return `${len}${body}`;
}

/** A tar of the entries in order; names over 100 bytes get a PAX `path` record. */
export function tarOf(entries: readonly TestTarEntry[]): Buffer {
  const out: Buffer[] = [];
  for (const e of entries) {
    const type = e.type ?? 'file';
    const data = type === 'file' ? Buffer.from(e.data ?? '') : Buffer.alloc(0);
    if (Buffer.byteLength(e.path) > 99 || Buffer.byteLength(e.linkpath ?? '') > 99) {
      const pax = Buffer.from(paxRecord('path', e.path) + (e.linkpath ? paxRecord('linkpath', e.linkpath) : ''));
      out.push(header('PaxHeader', 'x', pax.length, { path: 'PaxHeader' }), pad(pax));
    }
    out.push(header(e.path.slice(0, 99), TYPEFLAG[type], data.length, { ...e, linkpath: e.linkpath?.slice(0, 99) }), pad(data));
  }
  out.push(Buffer.alloc(1024));
  return Buffer.concat(out);
}
