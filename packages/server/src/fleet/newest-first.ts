/** A timeline newest first (ISO times sort as strings): after a pause, the first is the snapshot its resume restores. */
export function newestFirst<T extends { createdAt: string }>(timeline: readonly T[]): T[] {
  return [...timeline].sort((a, b) => (a.createdAt < b.createdAt ? 1 : a.createdAt > b.createdAt ? -1 : 0));
}
