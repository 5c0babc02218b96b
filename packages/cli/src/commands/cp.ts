import { createReadStream, createWriteStream } from 'node:fs';
import { stat, unlink } from 'node:fs/promises';
import { basename, join, posix } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ForkdError, type Sandbox } from '@forkd/sdk';
import { expectPositionals, parseOptions } from '../args.js';
import type { CliCommand } from '../command.js';
import { openSandbox } from '../connect.js';
import { ProgressBar } from '../progress-bar.js';
import { parseCopyEndpoint, type CopyEndpoint } from '../remote-path.js';
import { UsageError } from '../usage-error.js';

const USAGE = `Usage: forkd cp [options] SRC DST

Copies a file into or out of a sandbox; one side is ID:/path. Data is
streamed, so size is not limited by memory. A DST that is a directory (or
ends with /) receives the file under its own name. - is stdin or stdout.

  forkd cp ./data.csv ID:/work/         upload
  forkd cp ID:/work/out.tar.gz .        download
  tar c dir | forkd cp - ID:/tmp/d.tar  from stdin

Directories are not copied; use tar through forkd exec or cp -.

Options:
  -q, --quiet   no progress bar
`;

type Remote = Extract<CopyEndpoint, { kind: 'remote' }>;
type Local = Extract<CopyEndpoint, { kind: 'local' }>;

export type CpArgs = { direction: 'upload'; from: Local; to: Remote; quiet: boolean } | { direction: 'download'; from: Remote; to: Local; quiet: boolean };

export function parseCpArgs(argv: string[]): CpArgs {
  const { values, positionals } = parseOptions({ args: argv, allowPositionals: true, options: { quiet: { type: 'boolean', short: 'q' } } });
  const [src, dst] = expectPositionals(positionals, ['SRC', 'DST']);
  const from = parseCopyEndpoint(src!);
  const to = parseCopyEndpoint(dst!);
  const quiet = !!values.quiet;
  if (from.kind === 'local' && to.kind === 'remote') return { direction: 'upload', from, to, quiet };
  if (from.kind === 'remote' && to.kind === 'local') return { direction: 'download', from, to, quiet };
  throw new UsageError(from.kind === 'remote' ? 'both sides are in sandboxes: copy through a local file' : 'neither side is in a sandbox (write one as ID:/path)');
}

/** Progress only where someone watches it, and only when worth drawing. */
function progressFor(quiet: boolean, label: string, size: number | undefined): ProgressBar | undefined {
  if (quiet || !process.stderr.isTTY) return undefined;
  if (size !== undefined && size < 4 * 1024 * 1024) return undefined;
  return new ProgressBar(process.stderr, label, size);
}

function counter(bar: ProgressBar | undefined): Transform {
  return new Transform({
    transform(chunk: Buffer, _enc, cb) {
      bar?.add(chunk.length);
      cb(null, chunk);
    },
  });
}

/** Counts bytes as the upload pulls them; a read error ends the iteration, and so the upload. */
async function* counted(source: AsyncIterable<Buffer>, bar: ProgressBar | undefined): AsyncGenerator<Uint8Array> {
  for await (const chunk of source) {
    bar?.add(chunk.length);
    yield chunk;
  }
}

async function upload(sb: Sandbox, args: Extract<CpArgs, { direction: 'upload' }>): Promise<void> {
  const fromStdin = args.from.path === '-';
  let size: number | undefined;
  let mode: number | undefined;
  if (!fromStdin) {
    const st = await stat(args.from.path);
    if (st.isDirectory()) throw new ForkdError('INVALID_ARGUMENT', `${args.from.path} is a directory: copy a tar instead (tar c DIR | forkd cp - ID:/path.tar)`);
    size = st.size;
    mode = st.mode & 0o7777;
  }
  let dest = args.to.path;
  const intoDir = dest.endsWith('/') || ((await sb.files.stat(dest).catch(() => undefined))?.type === 'dir');
  if (intoDir) {
    if (fromStdin) throw new UsageError(`${args.to.id}:${dest} is a directory: name the file to write from stdin`);
    dest = posix.join(dest, basename(args.from.path));
  }
  const bar = progressFor(args.quiet, `${basename(dest)}`, size);
  const source = fromStdin ? process.stdin : createReadStream(args.from.path, { highWaterMark: 1024 * 1024 });
  try {
    await sb.files.write(dest, counted(source, bar), mode === undefined ? {} : { mode });
    bar?.finish();
  } catch (err) {
    bar?.abort();
    throw err;
  }
}

async function download(sb: Sandbox, args: Extract<CpArgs, { direction: 'download' }>): Promise<void> {
  const entry = await sb.files.stat(args.from.path);
  if (entry.type === 'dir') throw new ForkdError('INVALID_ARGUMENT', `${args.from.id}:${args.from.path} is a directory: copy a tar instead (forkd exec ID -- tar c DIR > dir.tar)`);
  const toStdout = args.to.path === '-';
  let dest = args.to.path;
  if (!toStdout && (dest.endsWith('/') || (await stat(dest).catch(() => undefined))?.isDirectory())) dest = join(dest, posix.basename(args.from.path));
  const bar = progressFor(args.quiet || toStdout, basename(dest), entry.size);
  const body = await sb.files.readStream(args.from.path);
  const source = Readable.fromWeb(body as import('node:stream/web').ReadableStream<Uint8Array>);
  try {
    if (toStdout) await pipeline(source, counter(bar), process.stdout, { end: false });
    else await pipeline(source, counter(bar), createWriteStream(dest, { mode: entry.mode & 0o7777 }));
    bar?.finish();
  } catch (err) {
    bar?.abort();
    // A half-written file looks like a good one: remove it.
    if (!toStdout) await unlink(dest).catch(() => {});
    throw err;
  }
}

export const cpCommand: CliCommand = {
  name: 'cp',
  usage: USAGE,
  async run(argv) {
    const args = parseCpArgs(argv);
    const sb = await openSandbox(args.direction === 'upload' ? args.to.id : args.from.id);
    if (args.direction === 'upload') await upload(sb, args);
    else await download(sb, args);
    return 0;
  },
};
