import type { SnapshotStamp } from './snapshot-stamp.js';

/** What restores snapshots on this host now. */
export interface InstalledVersions {
  format: number;
  forkd: string;
  /** Guest protocols the host speaks (it steps down from max to min for agents restored from older snapshots). */
  guestProtocol: { min: number; max: number };
  criu: string;
  runc: string;
}

/** CRIU restores images of its own and older versions back to this one (image format v2, stable since 3.x). */
export const CRIU_IMAGES_MIN = '3.0';

type Version = [number, number, number];

/** `x.y[.z][suffix]` as numbers; undefined when unreadable. */
export function versionOf(s: string): Version | undefined {
  const m = /^([0-9]+)\.([0-9]+)(?:\.([0-9]+))?/.exec(s);
  return m ? [Number(m[1]), Number(m[2]), Number(m[3] ?? 0)] : undefined;
}

/** a < b on major.minor (patch releases do not change what images hold). */
function olderMinor(a: Version, b: Version): boolean {
  return a[0] < b[0] || (a[0] === b[0] && a[1] < b[1]);
}

/**
 * Why the installed tools cannot restore a checkpoint stamped `stamp`
 * (empty: they can). The rules, each from what reads the images:
 * - forkd's checkpoint layout newer than this forkd's (a downgrade);
 * - a guest agent below the oldest protocol the host still speaks;
 * - CRIU images from a newer CRIU (major.minor) than installed, whose new
 *   image entries an older CRIU cannot read, or older than CRIU_IMAGES_MIN;
 * - a runc of a newer major than installed (its checkpoint descriptors).
 * An older CRIU's, runc's or agent's images are restorable: CRIU reads
 * older images and the host speaks down to older agents. An installed
 * version that could not be read is not held against any snapshot.
 */
export function incompatibilities(stamp: SnapshotStamp, now: InstalledVersions): string[] {
  const why: string[] = [];
  if (stamp.format > now.format) why.push(`made by forkd ${stamp.forkd} in checkpoint format ${stamp.format}; forkd ${now.forkd} reads up to format ${now.format}`);
  if (stamp.guestProtocol < now.guestProtocol.min) why.push(`its guest agent speaks protocol ${stamp.guestProtocol}; forkd ${now.forkd} speaks down to ${now.guestProtocol.min} only`);
  const criu = versionOf(stamp.criu);
  const criuNow = versionOf(now.criu);
  // An installed version this forkd could not read judges nothing (CRIU or runc then says what is wrong).
  if (!criu || !criuNow) {
    // nothing to compare
  } else if (olderMinor(criuNow, criu)) why.push(`dumped by CRIU ${stamp.criu}; the installed CRIU ${now.criu} is older and may not read its images`);
  else if (olderMinor(criu, versionOf(CRIU_IMAGES_MIN)!)) why.push(`dumped by CRIU ${stamp.criu}, older than ${CRIU_IMAGES_MIN}, whose images CRIU ${now.criu} no longer reads`);
  const runc = versionOf(stamp.runc);
  const runcNow = versionOf(now.runc);
  if (runc && runcNow && runc[0] > runcNow[0]) why.push(`checkpointed by runc ${stamp.runc}; the installed runc ${now.runc} is of an older major version`);
  return why;
}
