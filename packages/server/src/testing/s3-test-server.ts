import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

export interface S3TestServer {
  /** `http://127.0.0.1:<port>` */
  endpoint: string;
  bucket: string;
  accessKeyId: string;
  secretAccessKey: string;
  close(): Promise<void>;
}

const MAIN = fileURLToPath(new URL('./s3-test-server-main.js', import.meta.url));

/**
 * An S3-compatible server for tests: s3rver (a devDependency, patched to
 * S3's listing order and whole-object writes, see s3-test-server-main.ts)
 * in a process of its own on 127.0.0.1 at a free port, keeping objects in a
 * temporary directory, with one bucket and a key pair of its own. It checks
 * SigV4 signatures with its own code, not forkd's, so a wrong secret is
 * refused. The process ends when the test closes it or the test dies (its
 * stdin closes).
 */
export async function startS3TestServer(bucket = 'forkd-test'): Promise<S3TestServer> {
  const dir = await mkdtemp(join(tmpdir(), 'forkd-s3-'));
  const accessKeyId = `FORKDTEST${randomBytes(4).toString('hex').toUpperCase()}`;
  const secretAccessKey = `${randomBytes(18).toString('base64')}/+`;
  const child = spawn(process.execPath, ['--openssl-legacy-provider', MAIN, dir, bucket, accessKeyId], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  child.stdin.write(`${secretAccessKey}\n`);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const port = await new Promise<number>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout });
    lines.once('line', (line) => resolve((JSON.parse(line) as { port: number }).port));
    child.once('exit', (code) => reject(new Error(`S3 test server exited (${code}): ${stderr}`)));
  });
  return {
    endpoint: `http://127.0.0.1:${port}`,
    bucket,
    accessKeyId,
    secretAccessKey,
    async close() {
      child.stdin.end();
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
      await rm(dir, { recursive: true, force: true });
    },
  };
}
