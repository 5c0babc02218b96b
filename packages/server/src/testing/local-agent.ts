import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { REPO_ROOT } from '../shared/config.js';
import { GuestClient } from '../node/guest/guest-client.js';
import { unixDialer } from '../node/guest/guest-connection.js';

/** The guest agent binary the build made. */
export const AGENT = join(REPO_ROOT, 'packages/guest/build/forkd-guest');

export interface LocalAgent {
  /** A fresh directory the agent's socket is in (and the tests' files). */
  dir: string;
  sock: string;
  guest: GuestClient;
  stop(): Promise<void>;
}

/** The real agent outside any container (`--socket`), on this host's file system (in `parent`), spoken to by the host's real client; `args` are more of its flags. */
export async function startLocalAgent(prefix: string, args: string[] = [], parent = tmpdir()): Promise<LocalAgent> {
  const dir = await mkdtemp(join(parent, prefix));
  const sock = join(dir, 'agent.sock');
  const agent = spawn(AGENT, ['--socket', sock, ...args], { stdio: 'ignore' });
  for (let i = 0; i < 200 && !existsSync(sock); i++) await sleep(10);
  return {
    dir,
    sock,
    guest: new GuestClient(unixDialer(sock)),
    async stop() {
      agent.kill('SIGKILL');
      await rm(dir, { recursive: true, force: true });
    },
  };
}
