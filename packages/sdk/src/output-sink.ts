import type { OutputCallbacks, OutputEncoding } from './types.js';
import { utf8Chunks } from './bytes.js';

export interface OutputSinks {
  stdout: ((chunk: Uint8Array) => void) | undefined;
  stderr: ((chunk: Uint8Array) => void) | undefined;
}

/** Normalises the user's callbacks (bytes or text) into byte callbacks. */
export function outputSinks<E extends OutputEncoding>(cb: OutputCallbacks<E>): OutputSinks {
  if (cb.encoding === 'utf8') {
    const t = cb as OutputCallbacks<'utf8'>;
    return { stdout: t.onStdout && utf8Chunks(t.onStdout), stderr: t.onStderr && utf8Chunks(t.onStderr) };
  }
  const b = cb as OutputCallbacks<'bytes'>;
  return { stdout: b.onStdout, stderr: b.onStderr };
}
