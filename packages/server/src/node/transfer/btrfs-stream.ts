import { ForkdError } from '@forkd/protocol';
import { spawnStream } from '../../shared/exec.js';

/**
 * A read-only volume as a Btrfs send stream, incremental against `parent`
 * (read-only too) when given: the stream names the parent by its send
 * identity and carries only what differs. Streamed from the tool's stdout as
 * it is read (a root of gigabytes is never held in memory); the iteration
 * throws when `btrfs send` fails, and stops the tool when the reader stops.
 */
export async function* sendStream(volume: string, parent: string | undefined): AsyncGenerator<Uint8Array> {
  const args = ['send', '-q', ...(parent ? ['-p', parent] : []), volume];
  const child = spawnStream('btrfs', args);
  child.stream.end();
  let done = false;
  try {
    for await (const chunk of child.stream) yield chunk as Uint8Array;
    const r = await child.exit;
    done = true;
    if (r.code !== 0) throw toolError('send', args, r);
  } finally {
    if (!done) child.kill();
  }
}

/**
 * Receives a send stream into `dir` (an existing directory of the pool):
 * the volume it holds appears there under the name it had on the sender.
 * `--chroot` keeps what the stream names inside `dir`; `-e` ends at the
 * stream's end marker. The stream is verified as it is read (readChunked):
 * a bad chunk stops the tool, and the caller removes what it left.
 */
export async function receiveStream(dir: string, source: AsyncIterable<Uint8Array>): Promise<void> {
  const args = ['receive', '-C', '-e', dir];
  const child = spawnStream('btrfs', args);
  // A tool that stopped reading (a bad stream) makes writes fail: its exit says why, not the pipe.
  child.stream.on('error', () => {});
  child.stream.resume();
  let exited: { code: number; stderr: string } | undefined;
  void child.exit.then((r) => (exited = r));
  let fed = false;
  try {
    for await (const chunk of source) {
      if (exited) break;
      if (!child.stream.write(chunk)) await Promise.race([new Promise((r) => child.stream.once('drain', r)), child.exit]);
    }
    child.stream.end();
    fed = true;
    const r = await child.exit;
    if (r.code !== 0) throw toolError('receive', args, r);
  } finally {
    if (!fed) {
      child.kill();
      await child.exit;
    }
  }
}

function toolError(what: string, args: string[], r: { code: number; stderr: string }): ForkdError {
  const last = r.stderr.trim().split('\n').pop() ?? '';
  return new ForkdError('INTERNAL', `btrfs ${what} failed (exit ${r.code}): ${last.slice(0, 300)}`, { cmd: ['btrfs', ...args].join(' '), exitCode: r.code, stderrTail: r.stderr.slice(-4000) });
}
