import { readFileSync } from 'node:fs';

/** The CLI's version, from its package.json (dist/version.js → ../package.json). */
export function cliVersion(): string {
  try {
    return (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version?: string }).version ?? 'unknown';
  } catch {
    return 'unknown';
  }
}
