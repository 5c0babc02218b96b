import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface CliPackage {
  /** The @forkd/cli package's directory (packages/cli in a checkout). */
  dir: string;
  version: string;
}

let found: CliPackage | null | undefined;

/**
 * The @forkd/cli package this code runs from, found upward from the module:
 * dist/x.js, dist/commands/x.js and a chunk of the bundle (dist/bundle/)
 * sit at different depths. Undefined when there is none (a copied file).
 */
export function cliPackage(): CliPackage | undefined {
  if (found !== undefined) return found ?? undefined;
  found = null;
  for (let dir = dirname(fileURLToPath(import.meta.url)); ; dir = dirname(dir)) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: unknown; version?: unknown };
      if (pkg.name === '@forkd/cli') {
        found = { dir, version: typeof pkg.version === 'string' ? pkg.version : 'unknown' };
        break;
      }
    } catch {
      // no package.json here (or not JSON): keep going up
    }
    if (dirname(dir) === dir) break;
  }
  return found ?? undefined;
}
