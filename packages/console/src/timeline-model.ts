import type { SnapshotInfo } from '@forkd/protocol';

/** A snapshot as the strip draws it. */
export interface StripItem {
  snap: SnapshotInfo;
  /** Its size against the timeline's largest (0.05 to 1): the height of its bar. */
  sizeFraction: number;
  /** What it is called: its name, else why it was taken. */
  label: string;
}

/** The timeline (oldest first, as the API lists it) as strip items. */
export function stripItems(snaps: readonly SnapshotInfo[]): StripItem[] {
  const max = Math.max(1, ...snaps.map((s) => s.sizeBytes));
  return snaps.map((snap) => ({
    snap,
    sizeFraction: Math.min(1, Math.max(0.05, snap.sizeBytes / max)),
    label: snap.name ?? snap.reason,
  }));
}

/** The snapshot to show: the one asked for (a link from the lineage), else the newest; none in an empty timeline. */
export function selectedSnapshot(snaps: readonly SnapshotInfo[], wanted: string | null | undefined): SnapshotInfo | undefined {
  return snaps.find((s) => s.id === wanted) ?? snaps[snaps.length - 1];
}

/** A fork count typed by a person: a whole number of at least 1, else why not (the API checks the maximum). */
export function parseForkCount(text: string): { ok: true; count: number } | { ok: false; error: string } {
  const t = text.trim();
  if (!/^\d+$/.test(t) || Number(t) < 1) return { ok: false, error: 'the number of forks is a whole number, at least 1' };
  return { ok: true, count: Number(t) };
}
