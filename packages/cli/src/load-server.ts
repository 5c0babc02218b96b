import { ForkdError } from '@forkd/protocol';

export type ServerModule = typeof import('@forkd/server');

/**
 * The server package, for the commands that run it (serve, setup, install,
 * a recipe build). Loaded on use: the published CLI is a client and does not
 * depend on it (an optional peer), so without it those commands say where
 * to run them instead of every command failing at start.
 */
export async function loadServer(command: string): Promise<ServerModule> {
  try {
    return await import('@forkd/server');
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code === 'ERR_MODULE_NOT_FOUND' && e.message.includes('@forkd/server')) {
      throw new ForkdError('FAILED_PRECONDITION', `forkd ${command} runs the server, which this installation of the CLI does not include: run it from a checkout of forkd (./forkd ${command})`);
    }
    throw err;
  }
}
