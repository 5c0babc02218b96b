import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const TESTING = fileURLToPath(new URL('./', import.meta.url));

/** How a child reaches a daemon's HTTPS sandbox hosts as an E2B user would: only E2B_DOMAIN and E2B_API_KEY, plus the test's CA and resolver. */
export interface SdkChildTarget {
  domain: string;
  /** The loopback address the domain resolves to (loopback-resolver.ts). */
  address: string;
  caFile: string;
  key: string;
  /** The daemon's log tail, for a failure's message. */
  log?: () => string;
}

/**
 * Runs `script` (a file of testing/) with `args` in a child process that
 * trusts the test's CA (NODE_EXTRA_CA_CERTS is read at start only) and
 * resolves the test's domain to the daemon; resolves with the JSON object
 * printed as its last line of stdout.
 */
export function runSdkChild(t: SdkChildTarget, script: string, args: readonly string[] = []): Promise<Record<string, unknown>> {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, E2B_DOMAIN: t.domain, E2B_API_KEY: t.key, NODE_EXTRA_CA_CERTS: t.caFile, FORKD_TEST_RESOLVE: `${t.domain}=${t.address}` };
  const child = spawn(process.execPath, ['--import', join(TESTING, 'loopback-resolver.js'), join(TESTING, script), ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      const log = t.log?.().split('\n').slice(-20).join('\n') ?? '';
      if (code !== 0) return reject(new Error(`${script} ${args.join(' ')} exited ${code}:\n${stderr}\n${stdout}\ndaemon:\n${log}`));
      resolve(JSON.parse(stdout.trim().split('\n').at(-1)!) as Record<string, unknown>);
    });
  });
}
