/**
 * Where everything lives in a pool, as storage keys: the one place that
 * names them, so the manager, the template registry and the snapshot files
 * build no key or path of their own (docs/ARCHITECTURE.md, Storage). The
 * on-disk layout is these names under the pool's mount point; changing one
 * orphans what existing pools hold.
 */
export const poolLayout = {
  /** Instances' writable roots, by runtime key (a sandbox id, or after a rewind `<id>.<hex>`). */
  sandboxes: 'sandboxes',
  sandbox: (key: string): string => `sandboxes/${key}`,
  /** Read-only template roots; `.tmp-*` ones are half-made imports. */
  templates: 'templates',
  template: (name: string): string => `templates/${name}`,
  templateDraft: (name: string, suffix: string): string => `templates/.tmp-${name}-${suffix}`,
  isDraft: (key: string): boolean => key.split('/')[1]?.startsWith('.tmp-') ?? false,
  /** A warm template's memory images (a plain directory, not a volume); `.tmp-*` ones are an import's on their way in. */
  templateImagesDir: 'template-images',
  templateImages: (name: string): string => `template-images/${name}`,
  templateImagesDraft: (name: string, suffix: string): string => `template-images/.tmp-${name}-${suffix}`,
  /** Snapshot directories (`rootfs/` a read-only volume, `memory/`, `work/`); `.tmp-*` ones are drafts. */
  snapshots: 'snapshots',
  snapshot: (name: string): string => `snapshots/${name}`,
  snapshotRoot: (name: string): string => `snapshots/${name}/rootfs`,
  /**
   * Templates received from a blob store as the parent of imported snapshots
   * (see node/transfer): `template-parents/<send uuid>/<name>`, a read-only
   * volume whose received UUID is that uuid; `.tmp-*` directories are half-made.
   */
  templateParents: 'template-parents',
  templateParentDir: (uuid: string): string => `template-parents/${uuid}`,
  templateParent: (uuid: string, name: string): string => `template-parents/${uuid}/${name}`,
  /**
   * Image layers (node/images): one read-only volume per layer chain,
   * `image-layers/sha256-<chain id>`, each a snapshot of the one below plus
   * its layer; `<chain>.root` is the top chain with the mount points a
   * sandbox needs; `.tmp-*` ones are half-made.
   */
  imageLayers: 'image-layers',
  imageLayer: (chainId: string): string => `image-layers/${chainId.replace(':', '-')}`,
  imageRoot: (chainId: string): string => `image-layers/${chainId.replace(':', '-')}.root`,
  imageDraft: (suffix: string): string => `image-layers/.tmp-${suffix}`,
  /**
   * A Dockerfile build's step cache (node/dockerfile): one read-only volume
   * per step that changed files, `build-steps/<step key>`, a snapshot of the
   * step before plus what it did; `.tmp-*` ones are half-made.
   */
  buildSteps: 'build-steps',
  buildStep: (key: string): string => `build-steps/${key}`,
  buildStepDraft: (suffix: string): string => `build-steps/.tmp-${suffix}`,
  /** Keys of Dockerfile steps that change no files (ENV, USER...), as empty files: a plain directory, so a rebuild can say they were CACHED. */
  buildStepMarks: 'build-step-marks',
  /** When each build-cache entry (a step, a step mark, an image layer) was last used, as empty files' mtimes (storage/volume-use.ts). */
  buildCacheUse: 'build-cache-use',
  /** Plain directories of pulls under way (skopeo's copies, credentials); removed after each, and at start. */
  imagePulls: 'image-pulls',
} as const;
