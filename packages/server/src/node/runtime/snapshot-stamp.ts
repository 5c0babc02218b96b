import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * What made a checkpoint's images, written beside them (`forkd-stamp.json`)
 * when they are dumped, so a later forkd, CRIU, runc or guest agent can tell
 * before restoring whether it can (see snapshot-compat.ts). Images made
 * before stamps have none.
 */
export interface SnapshotStamp {
  /** forkd's own layout of a checkpoint (the files beside CRIU's); raised when a change makes older forkds unable to restore it. */
  format: number;
  forkd: string;
  /** The guest protocol of the agent that was PID 1 (the host speaks down to FORKD_GUEST_PROTOCOL_MIN). */
  guestProtocol: number;
  /** CRIU's and runc's versions as `x.y.z` (runc's suffix, e.g. `-rc1`, kept). */
  criu: string;
  runc: string;
}

export const STAMP_FILE = 'forkd-stamp.json';
/** This forkd's checkpoint layout. */
export const SNAPSHOT_FORMAT = 1;

/** A stamp's file: its bytes may come from another host (an imported snapshot), so they are parsed, never trusted. */
export type StampRead = { kind: 'stamped'; stamp: SnapshotStamp } | { kind: 'unstamped' } | { kind: 'malformed'; why: string };

const VERSION = /^[0-9]{1,6}\.[0-9]{1,6}(\.[0-9]{1,6})?([-+~][0-9A-Za-z.~+-]{1,40})?$/;
const MAX_STAMP_BYTES = 4096;

function field(o: Record<string, unknown>, k: string, ok: (v: unknown) => boolean): boolean {
  return Object.hasOwn(o, k) && ok(o[k]);
}

const smallInt = (v: unknown) => Number.isSafeInteger(v) && (v as number) >= 0 && (v as number) < 1_000_000;
const version = (v: unknown) => typeof v === 'string' && VERSION.test(v);

/** Decodes a stamp file's bytes; anything but a well-formed stamp is `malformed`, never a throw. */
export function parseStamp(bytes: Uint8Array): StampRead {
  if (bytes.length > MAX_STAMP_BYTES) return { kind: 'malformed', why: `larger than ${MAX_STAMP_BYTES} bytes` };
  let o: unknown;
  try {
    o = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch {
    return { kind: 'malformed', why: 'not JSON' };
  }
  if (typeof o !== 'object' || o === null || Array.isArray(o)) return { kind: 'malformed', why: 'not an object' };
  const r = o as Record<string, unknown>;
  if (!field(r, 'format', smallInt) || !field(r, 'guestProtocol', smallInt)) return { kind: 'malformed', why: 'format or guestProtocol is not a small integer' };
  if (!field(r, 'criu', version) || !field(r, 'runc', version)) return { kind: 'malformed', why: 'criu or runc is not a version' };
  if (!field(r, 'forkd', (v) => typeof v === 'string' && v.length <= 64)) return { kind: 'malformed', why: 'forkd is not a version' };
  return { kind: 'stamped', stamp: { format: r.format as number, forkd: r.forkd as string, guestProtocol: r.guestProtocol as number, criu: r.criu as string, runc: r.runc as string } };
}

export async function readStamp(imagesDir: string): Promise<StampRead> {
  let bytes: Buffer;
  try {
    bytes = await readFile(join(imagesDir, STAMP_FILE));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { kind: 'unstamped' };
    throw err;
  }
  return parseStamp(bytes);
}

/** Root's own new file (never written through something already there). */
export async function writeStamp(imagesDir: string, stamp: SnapshotStamp): Promise<void> {
  await writeFile(join(imagesDir, STAMP_FILE), JSON.stringify(stamp) + '\n', { mode: 0o600, flag: 'wx' });
}
