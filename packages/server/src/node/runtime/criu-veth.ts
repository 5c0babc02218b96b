import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { RuntimeNetwork } from '../network/network.js';

/** In a restore's bundle: the CRIU config naming the host end of the veth its images hold. */
const CONFIG = 'criu-veth.conf';

/**
 * The environment of a restore of `id` from `imagesDir` into a namespace of
 * the images' own: when they hold the sandbox end of a veth (dumped with
 * egress), CRIU is told, in a config of its own (CRIU_CONFIG_FILE, read
 * beside its default one, kept in the bundle), to make the pair again with
 * the host end the network gives this instance. Undefined: none.
 */
export async function restoreVethEnv(network: RuntimeNetwork, id: string, imagesDir: string, bundle: string): Promise<Record<string, string> | undefined> {
  if (!(await imagesHaveLink(imagesDir, network.sandboxLink))) return undefined;
  const veth = await network.restoredVeth(id);
  const config = join(bundle, CONFIG);
  await writeFile(config, `external veth[${veth.sandbox}]:${veth.host}\n`, { mode: 0o600 });
  return { CRIU_CONFIG_FILE: config };
}

/** CRIU's images of the namespace's links (netdev-<id>.img) name the sandbox end when there is one. */
async function imagesHaveLink(imagesDir: string, name: string): Promise<boolean> {
  const names = await readdir(imagesDir).catch(() => [] as string[]);
  for (const n of names.filter((f) => /^netdev-\d+\.img$/.test(f))) {
    if ((await readFile(join(imagesDir, n))).includes(name)) return true;
  }
  return false;
}
