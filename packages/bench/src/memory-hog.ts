import type { SandboxManager } from '@forkd/server';
import { run, waitFor } from '@forkd/server/testing';

/** A process holding `mb` MB of resident, incompressible memory; resolves once it is all written. */
export async function startMemoryHog(m: SandboxManager, id: string, mb: number): Promise<void> {
  const py = `import os,time\nb=bytearray(os.urandom(${mb}<<20))\nopen('/tmp/ready','w').write('1')\nwhile True: time.sleep(1)`;
  (await m.spawn(id, { argv: ['python3', '-c', py], tag: 'hog' })).process.detach();
  await waitFor(async () => (await run(m, id, ['test', '-e', '/tmp/ready'])).exitCode === 0, 60_000, `the ${mb} MB process`);
}
