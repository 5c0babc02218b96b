import { readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { exec, type ExecResult } from '../../shared/exec.js';
import { processOf, type LiveProcess } from './live-process.js';

/** The file runc writes into a dump's images (the init's stdio, which its restore reopens). */
export const DESCRIPTORS_FILE = 'descriptors.json';
/** Where criu's relay keeps runc's request, in the bundle. */
const REQUEST_FILE = 'dump-request';
/** What else a dump without runc needs, kept beside it once runc's dump succeeded. */
const KEPT_FILE = 'dump-request.json';

/** runc's request and what goes with it, for the init it was made for. */
export interface KeptDump {
  init: LiveProcess;
  descriptors: string;
}

/**
 * A dump without runc. runc's part in one (forkd always has CRIU leave the
 * tree running; whether it stays frozen is forkd's own business) is
 * to build CRIU's request from the container's config and its init, to write
 * descriptors.json into the images, and to answer "go on" to CRIU's
 * notifications; starting runc is ~20 ms of every snapshot here. While one
 * init lives, runc builds the same request every time (its pid, the root,
 * the cgroups, the config's mounts and namespaces), and the same
 * descriptors: so criu's relay keeps the first request runc sends
 * (`saveEnv`), and the next dumps of that init have the wrapper send it to
 * CRIU itself (`criu dump-saved`, host-tools/src/criu-version/relay.c).
 *
 * Kept in the bundle, which every start and restore writes anew
 * (`forget`); used only while the pid file names the process (pid and start
 * time) it was kept for.
 */
export interface DirectDump {
  /** For runc's dump: the relay keeps its request. */
  readonly saveEnv: Record<string, string>;
  /** What was kept for the running init, if anything. */
  kept(): Promise<KeptDump | undefined>;
  /** The dump from what was kept; exit 2: it could not start (nothing frozen). */
  run(k: KeptDump, imagesDir: string, workDir: string): Promise<ExecResult>;
  /** After runc's dump of `imagesDir` succeeded: keep what the next one needs, for the init it dumped. */
  keep(imagesDir: string): Promise<void>;
  forget(): Promise<void>;
}

/** The direct dumps of the container whose bundle is `bundle` (its pid file init.pid), by `criu` (forkd's wrapper). */
export function directDump(bundle: string, criu: string, env: NodeJS.ProcessEnv): DirectDump {
  const request = join(bundle, REQUEST_FILE);
  const keptFile = join(bundle, KEPT_FILE);
  const pidFile = join(bundle, 'init.pid');
  const forget = () => Promise.all([rm(request, { force: true }), rm(keptFile, { force: true })]).then(() => {});
  return {
    saveEnv: { FORKD_CRIU_SAVE_REQUEST: request },
    async kept() {
      const [k, init] = await Promise.all([readKept(keptFile), processOf(pidFile)]);
      return k && init && k.init.pid === init.pid && k.init.startTime === init.startTime ? k : undefined;
    },
    async run(k, imagesDir, workDir) {
      await writeFile(join(imagesDir, DESCRIPTORS_FILE), k.descriptors, { mode: 0o600 });
      return exec(criu, ['dump-saved', request, imagesDir, workDir], { allowFailure: true, env, stdio: ['ignore', 'pipe', 'pipe'] });
    },
    async keep(imagesDir) {
      const [init, descriptors] = await Promise.all([processOf(pidFile), readFile(join(imagesDir, DESCRIPTORS_FILE), 'utf8').catch(() => undefined)]);
      // No request (a dump the relay did not carry), or no init to name: nothing to send again.
      if (!init || descriptors === undefined || !(await stat(request).then((s) => s.size > 0, () => false))) return forget();
      const tmp = `${keptFile}.tmp`;
      await writeFile(tmp, JSON.stringify({ init, descriptors } satisfies KeptDump), { mode: 0o600 });
      await rename(tmp, keptFile);
    },
    forget,
  };
}

/** The kept file's record, or undefined for none or one that is not well formed (then runc dumps, as before). */
async function readKept(file: string): Promise<KeptDump | undefined> {
  const text = await readFile(file, 'utf8').catch(() => undefined);
  if (text === undefined) return undefined;
  try {
    const v = JSON.parse(text) as Partial<KeptDump> & { init?: Partial<LiveProcess> };
    const pid = v.init?.pid;
    const startTime = v.init?.startTime;
    if (typeof pid !== 'number' || typeof startTime !== 'string' || typeof v.descriptors !== 'string') return undefined;
    return { init: { pid, startTime }, descriptors: v.descriptors };
  } catch {
    return undefined;
  }
}
