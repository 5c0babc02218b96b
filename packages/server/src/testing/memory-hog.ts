import type { NodeService } from '../node-contract/index.js';
import { run, waitFor } from './helpers.js';

/**
 * A process holding `mb` MB of random bytes that it touches only when asked
 * (SIGUSR1: it hashes them into /tmp/h): after a lazy restore every page it
 * holds comes in through the pages daemon, not through its own faults.
 */
export async function startMemoryHog(m: Pick<NodeService, 'spawn'>, id: string, mb: number, readyMs = 30_000): Promise<void> {
  const hog = `import os,time,signal,hashlib\nb=bytearray(os.urandom(${mb}*1024*1024))\ndef s(*a):\n  open('/tmp/h.tmp','w').write(hashlib.sha256(b).hexdigest())\n  os.rename('/tmp/h.tmp','/tmp/h')\nsignal.signal(signal.SIGUSR1, s)\ns()\nopen('/tmp/pid','w').write(str(os.getpid()))\nwhile True: time.sleep(1)`;
  (await m.spawn(id, { argv: ['python3', '-c', hog], tag: 'hog' })).process.detach();
  await waitFor(async () => (await run(m, id, ['test', '-e', '/tmp/pid'])).exitCode === 0, readyMs, 'hog ready');
}

/** The hash of the hog's bytes as it reads them now, in `id` (the sandbox it started in, or a fork of it). */
export async function memoryHash(m: Pick<NodeService, 'spawn'>, id: string): Promise<string> {
  await run(m, id, ['sh', '-c', 'rm -f /tmp/h && kill -USR1 $(cat /tmp/pid)']);
  await waitFor(async () => (await run(m, id, ['test', '-e', '/tmp/h'])).exitCode === 0, 20_000, 'a fresh hash');
  return (await run(m, id, ['cat', '/tmp/h'])).stdout;
}
