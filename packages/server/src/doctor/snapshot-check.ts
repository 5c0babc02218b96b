import { criuPath } from '../setup/setup.js';
import { runcPath } from '../setup/private-runc.js';
import { incompatibleCheckpoints } from '../node/runtime/incompatible-checkpoints.js';
import { installedVersions } from '../node/runtime/installed-versions.js';
import { finding, type HostCheck } from './host-check.js';

/** How many checkpoints a finding names; the rest are counted. */
const NAMED = 5;

/**
 * Snapshots (and warm templates' memory images) that the installed CRIU,
 * runc and forkd cannot restore, judged by the version stamp each was made
 * with (snapshot-compat.ts): after an upgrade or a downgrade, before a
 * resume, fork or rewind finds out.
 */
export const snapshotsCheck: HostCheck = async ({ host, config }) => {
  const now = await installedVersions(criuPath(config), runcPath(config), async (path, args) => {
    const out = await host.run(path, args);
    return out.kind === 'ran' ? out.stdout : undefined;
  });
  const bad = await incompatibleCheckpoints(config.pool.mountPoint, now, host);
  if (!bad.length) return finding('snapshots', 'ok', `every stamped snapshot restorable by CRIU ${now.criu}, runc ${now.runc}, forkd ${now.forkd}`);
  const named = bad.slice(0, NAMED).map((b) => `${b.kind} ${b.name}: ${b.why.join('; ')}`);
  const more = bad.length > NAMED ? `; and ${bad.length - NAMED} more` : '';
  return finding('snapshots', 'warn', `${bad.length} checkpoint(s) cannot be restored by the installed versions: ${named.join(' | ')}${more}`, 'install the versions they were made with (forkd setup of that forkd), or delete them; running sandboxes are not affected');
};
