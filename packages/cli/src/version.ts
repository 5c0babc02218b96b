import { cliPackage } from './package-dir.js';

/** The CLI's version, from its package.json. */
export function cliVersion(): string {
  return cliPackage()?.version ?? 'unknown';
}
