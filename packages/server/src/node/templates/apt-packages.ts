import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ForkdError } from '@forkd/protocol';
import { exec } from '../../shared/exec.js';
import type { TemplateBuildHost } from './template-builder.js';
import { runSetup } from './template-builder.js';

/** Where a build sandbox gets the packages, removed once they are installed. */
const GUEST_DIR = '/var/cache/forkd-debs';
/** A base's dpkg status is ~0.5 MB; one far larger is not a Debian root's. */
const MAX_STATUS_BYTES = 32 * 1024 * 1024;

/**
 * Installs Debian packages in a build sandbox, which has no network: the
 * host's apt resolves them against the sandbox's own dpkg status (so only
 * what it lacks is fetched) and downloads them from the host's sources; the
 * .debs are written into the sandbox, and apt there installs them, its
 * maintainer scripts running inside the sandbox, never on the host.
 */
export async function installAptPackages(m: TemplateBuildHost, id: string, packages: readonly string[], progress: (line: string) => void | Promise<void>): Promise<void> {
  await progress(`apt: ${packages.join(' ')}`);
  const guest = await m.guest(id);
  const status = await readAll(await guest.readFile('/var/lib/dpkg/status'));
  const host = await mkdtemp(join(tmpdir(), 'forkd-debs-'));
  try {
    const debs = await downloadDebs(host, status, packages);
    await progress(`apt: ${debs.length} packages fetched by the host`);
    if (debs.length === 0) return;
    await runSetup(m, id, `rm -rf ${GUEST_DIR} && mkdir -p ${GUEST_DIR}`, progress);
    for (const deb of debs) await guest.writeFile(`${GUEST_DIR}/${deb}`, await readFile(join(host, 'archives', deb)));
    await runSetup(m, id, `DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends ${GUEST_DIR}/*.deb && rm -rf ${GUEST_DIR}`, progress);
  } finally {
    await rm(host, { recursive: true, force: true });
  }
}

/** The host's apt, with the sandbox's status as the installed set: the file names of the .debs it fetched. */
async function downloadDebs(dir: string, status: Buffer, packages: readonly string[]): Promise<string[]> {
  await mkdir(join(dir, 'archives', 'partial'), { recursive: true });
  await writeFile(join(dir, 'status'), status);
  const args = [
    'install', '--download-only', '-y', '-q', '--no-install-recommends',
    '-o', `Dir::State::status=${join(dir, 'status')}`,
    '-o', `Dir::Cache::archives=${join(dir, 'archives')}/`,
    // Nothing of the host's is installed or changed: its dpkg lock is not needed.
    '-o', 'Debug::NoLocking=1',
    ...packages,
  ];
  const r = await exec('apt-get', args, { timeoutMs: 1_200_000, allowFailure: true, env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  if (r.code !== 0) throw new ForkdError('FAILED_PRECONDITION', `the node's apt could not fetch ${packages.join(' ')} (exit ${r.code}; are its sources updated?)`, { stderr: r.stderr.slice(-4000) });
  return (await readdir(join(dir, 'archives'))).filter((f) => f.endsWith('.deb')).sort();
}

async function readAll(file: { size: number; chunks: AsyncGenerator<Buffer> }): Promise<Buffer> {
  if (file.size > MAX_STATUS_BYTES) throw new ForkdError('FAILED_PRECONDITION', 'the template has no usable dpkg status for apt packages');
  const parts: Buffer[] = [];
  for await (const c of file.chunks) parts.push(c);
  return Buffer.concat(parts);
}
