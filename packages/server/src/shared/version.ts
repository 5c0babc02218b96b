import { readFileSync } from 'node:fs';

/** The server package's version (dist/shared/version.js → ../../package.json). */
export const SERVER_VERSION: string = (() => {
  try {
    return (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: string }).version ?? 'unknown';
  } catch {
    return 'unknown';
  }
})();
