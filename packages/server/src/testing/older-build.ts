import { existsSync } from 'node:fs';
import { cp, mkdir, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '../shared/config.js';
import { exec } from '../shared/exec.js';

/** A build of an older commit of this repository, its daemon runnable beside this one's. */
export interface OlderBuild {
  commit: string;
  dir: string;
  /** Its CLI (`forkd serve` from that commit). */
  cli: string;
  /** What building it cost (0 when an earlier run's build was reused). */
  buildMs: number;
}

/**
 * The repository's node_modules for an older tree: every dependency linked
 * to this one's, and @forkd/* to the older tree's own packages (a link to
 * this node_modules would resolve them here, to the newer code).
 */
async function linkModules(dir: string): Promise<void> {
  const mods = join(dir, 'node_modules');
  await mkdir(join(mods, '@forkd'), { recursive: true });
  for (const name of await readdir(join(REPO_ROOT, 'node_modules'))) {
    if (name !== '@forkd') await symlink(join(REPO_ROOT, 'node_modules', name), join(mods, name));
  }
  for (const pkg of await readdir(join(dir, 'packages'))) {
    const manifest = await readFile(join(dir, 'packages', pkg, 'package.json'), 'utf8').catch(() => undefined);
    const name = manifest ? (JSON.parse(manifest) as { name?: string }).name : undefined;
    if (name?.startsWith('@forkd/')) await symlink(join('..', '..', 'packages', pkg), join(mods, name));
  }
}

/** The guest agent and host tools: copied when that commit's sources are this tree's, else made. */
async function nativeParts(commit: string, dir: string): Promise<void> {
  for (const part of ['packages/guest', 'packages/host-tools']) {
    const same = (await exec('git', ['-C', REPO_ROOT, 'diff', '--quiet', commit, '--', `${part}/src`, `${part}/Makefile`], { allowFailure: true })).code === 0;
    if (same && existsSync(join(REPO_ROOT, part, 'build'))) await cp(join(REPO_ROOT, part, 'build'), join(dir, part, 'build'), { recursive: true });
    else await exec('make', ['-s', '-C', join(dir, part)], { timeoutMs: 600_000 });
  }
}

/**
 * `commit` checked out (git archive: no worktree registered) and built
 * (`tsc -b`, the native parts only if they differ) under the temp dir, once:
 * later runs from the same checkout reuse it. Undefined when the clone lacks that commit (shallow).
 */
export async function olderBuild(commit: string): Promise<OlderBuild | undefined> {
  const known = await exec('git', ['-C', REPO_ROOT, 'cat-file', '-e', `${commit}^{commit}`], { allowFailure: true });
  if (known.code !== 0) return undefined;
  const dir = join(tmpdir(), `forkd-upgrade-from-${commit.slice(0, 12)}`);
  const cli = join(dir, 'packages/cli/dist/main.js');
  const marker = join(dir, '.built');
  // Its dependencies are links into the checkout that built it: reused only by that checkout, while it exists.
  const built = (await readFile(marker, 'utf8').then((t) => JSON.parse(t) as { modules?: string }).catch(() => undefined))?.modules;
  if (built === REPO_ROOT && existsSync(join(dir, 'node_modules', 'typescript'))) return { commit, dir, cli, buildMs: 0 };
  const t0 = performance.now();
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  const tar = `${dir}.tar`;
  await exec('git', ['-C', REPO_ROOT, 'archive', `--output=${tar}`, commit]);
  await exec('tar', ['-xf', tar, '-C', dir]);
  await rm(tar, { force: true });
  await linkModules(dir);
  await exec(process.execPath, [join(REPO_ROOT, 'node_modules/typescript/bin/tsc'), '-b'], { cwd: dir, timeoutMs: 900_000 });
  await nativeParts(commit, dir);
  const buildMs = Math.round(performance.now() - t0);
  await writeFile(marker, JSON.stringify({ commit, buildMs, modules: REPO_ROOT }) + '\n');
  return { commit, dir, cli, buildMs };
}
