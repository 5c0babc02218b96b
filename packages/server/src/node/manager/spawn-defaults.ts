import type { SpawnOptions } from '../../node-contract/node-types.js';
import type { SpawnDefaults, TemplateImage } from '../../store/store.js';

/**
 * The command of a login-bash command line: `/bin/bash -lc CMD` (the API's
 * `command`, template builds) or `/bin/bash -l -c CMD` (E2B's SDK).
 */
export function shellCommandOf(argv: readonly string[]): string | undefined {
  if (argv[0] !== '/bin/bash' && argv[0] !== 'bash') return undefined;
  if (argv.length === 3 && argv[1] === '-lc') return argv[2];
  if (argv.length === 4 && argv[1] === '-l' && argv[2] === '-c') return argv[3];
  return undefined;
}

/**
 * A spawn with its sandbox's defaults: the image's WorkingDir and User when
 * the call names none, and in an image without bash (Alpine, busybox) a
 * bash command line runs through its shell instead, so `command` works
 * there too. An image with no shell at all answers such a call with exec's
 * ENOENT, and an argv of its own binaries still runs.
 */
export function withSpawnDefaults(opts: SpawnOptions, d: SpawnDefaults | undefined): SpawnOptions {
  if (!d) return opts;
  const cmd = d.shell ? shellCommandOf(opts.argv) : undefined;
  return {
    ...opts,
    ...(cmd !== undefined && d.shell ? { argv: [...d.shell, cmd] } : {}),
    ...(opts.cwd === undefined && d.cwd ? { cwd: d.cwd } : {}),
    ...(opts.user === undefined && d.user ? { user: d.user } : {}),
  };
}

/** A new sandbox's defaults from its template's image (none for a template not made from one). */
export function spawnDefaultsOf(image: TemplateImage | undefined): SpawnDefaults | undefined {
  if (!image || (!image.cwd && !image.user && !image.shell)) return undefined;
  return { ...(image.cwd ? { cwd: image.cwd } : {}), ...(image.user ? { user: image.user } : {}), ...(image.shell ? { shell: image.shell } : {}) };
}
