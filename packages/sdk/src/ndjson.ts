import { ForkdError } from '@forkd/protocol/errors';
import { streamReadError } from './wire-error.js';

/**
 * Parses an NDJSON body into objects. Lines may be split anywhere across
 * chunks (even inside a UTF-8 sequence); blank lines are skipped, which also
 * lets a server send bare newlines as keep-alives. Leaving the loop early
 * cancels the body, which the server takes as a detach.
 */
export async function* readNdjson(body: ReadableStream<Uint8Array>): AsyncGenerator<unknown, void, undefined> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let pending = '';
  try {
    for (;;) {
      let r: Awaited<ReturnType<typeof reader.read>>;
      try {
        r = await reader.read();
      } catch (err) {
        throw streamReadError(err);
      }
      if (r.done) break;
      pending += decoder.decode(r.value, { stream: true });
      let start = 0;
      for (let nl = pending.indexOf('\n'); nl >= 0; nl = pending.indexOf('\n', start)) {
        const line = pending.slice(start, nl);
        start = nl + 1;
        if (line.trim()) yield parseLine(line);
      }
      pending = pending.slice(start);
    }
    pending += decoder.decode();
    if (pending.trim()) yield parseLine(pending);
  } finally {
    await reader.cancel().catch(() => {});
  }
}

function parseLine(line: string): unknown {
  try {
    return JSON.parse(line);
  } catch {
    throw new ForkdError('INTERNAL', `malformed NDJSON line from server: ${line.slice(0, 200)}`);
  }
}
