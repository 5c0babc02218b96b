/**
 * What a sandbox's root filesystem is, as a runtime takes it. The container
 * runtime takes a host directory (runc's `root.path`, seen through an
 * idmapped mount); a future microVM runtime would take a block image
 * (`{ kind: 'image', ... }`) that its guest mounts itself. A Runtime declares
 * the kind it takes (Runtime.rootKind) and Storage hands out roots of that
 * kind (Storage.root), so nothing between them knows which it is.
 */
export type SandboxRoot = DirectoryRoot;

/** A host directory holding the root's files (a Btrfs subvolume, or a plain directory in unit tests). */
export interface DirectoryRoot {
  kind: 'directory';
  /** Host path of the directory. */
  path: string;
}

export type RootKind = SandboxRoot['kind'];

/** The host directory of a root, for the code that only works on directories (the container runtime, its guest transport). */
export function rootDirectory(root: SandboxRoot): string {
  if (root.kind !== 'directory') throw new Error(`a root of kind ${String((root as { kind: unknown }).kind)} has no host directory`);
  return root.path;
}
