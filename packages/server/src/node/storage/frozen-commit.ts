/**
 * The filesystem snapshot to make while a sandbox's process tree is frozen,
 * so its files are from the same instant as its memory (Runtime.checkpoint).
 * Produced by Storage (Storage.frozenCommit), which alone knows how its
 * snapshots are made; consumed by a Runtime, which alone knows when the tree
 * is frozen. A runtime that freezes in a helper process (the container
 * runtime: CRIU's action script) runs the argv there; one that freezes from
 * this process may exec it itself. Either way it makes the same read-only
 * volume as Storage.commit with keepActive, and its parent directories exist
 * already.
 */
export interface FrozenCommit {
  readonly kind: 'host-command';
  /** argv of a host command (argv[0] on the PATH or absolute); exit 0 means the snapshot exists. */
  readonly argv: readonly string[];
}
