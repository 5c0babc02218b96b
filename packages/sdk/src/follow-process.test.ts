import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ForkdError } from '@forkd/protocol/errors';
import { followProcess } from './follow-process.js';
import type { ResumePoint } from './resume.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');

/** An NDJSON response of these events; `cut`: the body then fails as a connection the daemon's death reset. */
function ndjson(events: object[], cut = false): Response {
  const lines = events.map((e) => JSON.stringify(e) + '\n').join('');
  let pulls = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(c) {
      if (pulls++ === 0) c.enqueue(new TextEncoder().encode(lines));
      else if (cut) c.error(new TypeError('terminated'));
      else c.close();
    },
  });
  return new Response(body);
}

test('a stream that ends or breaks before the exit is resumed from the position it received, until the exit', async () => {
  const asked: ResumePoint[] = [];
  const answers: Array<() => Response> = [
    () => {
      throw new ForkdError('UNAVAILABLE', 'connection refused');
    },
    () => ndjson([{ type: 'started', pid: 5, pty: false, token: 9, offset: 12 }, { type: 'stdout', data: b64('3\n') }]),
    () => ndjson([{ type: 'started', pid: 5, pty: false, token: 9, offset: 19 }, { type: 'position', offset: 40 }, { type: 'stdout', data: b64('9\n') }, { type: 'exit', exitCode: 7, signal: 0, oomKilled: false }]),
  ];
  const first = ndjson([{ type: 'started', pid: 5, pty: false, token: 9, offset: 0 }, { type: 'stdout', data: b64('1\n') }, { type: 'stderr', data: b64('2\n') }], true);
  let out = '';
  let starts = 0;
  const exit = await followProcess(
    first,
    { onStarted: () => starts++, onStdout: (c) => (out += Buffer.from(c).toString()), onStderr: (c) => (out += Buffer.from(c).toString()) },
    {
      reconnectMs: 5000,
      reopen: async (pid, at) => {
        assert.equal(pid, 5);
        asked.push(at);
        return answers.shift()!();
      },
    },
  );
  assert.deepEqual(exit, { exitCode: 7, signal: 0, oomKilled: false });
  assert.equal(out, '1\n2\n3\n9\n');
  assert.equal(starts, 1, 'the caller hears of the start once');
  // 7 bytes per 2-byte line; the refused attempt asked from the same point as the one answered.
  assert.deepEqual(asked, [{ token: 9, offset: 14 }, { token: 9, offset: 14 }, { token: 9, offset: 19 }]);
});

test('no resume point (an older server), resuming off, or a refusal: the stream ends as before', async () => {
  const never = async (): Promise<Response> => assert.fail('must not re-attach');
  assert.equal(await followProcess(ndjson([{ type: 'started', pid: 5, pty: false }]), {}, { reconnectMs: 5000, reopen: never }), null);
  assert.equal(await followProcess(ndjson([{ type: 'started', pid: 5, pty: false, token: 1, offset: 0 }]), {}, { reconnectMs: 0, reopen: never }), null);
  await assert.rejects(
    followProcess(ndjson([{ type: 'started', pid: 5, pty: false, token: 1, offset: 0 }]), {}, {
      reconnectMs: 5000,
      reopen: async () => {
        throw new ForkdError('NOT_FOUND', 'no such process');
      },
    }),
    { code: 'NOT_FOUND' },
  );
  await assert.rejects(
    followProcess(ndjson([{ type: 'started', pid: 5, pty: false, token: 1, offset: 0 }]), {}, {
      reconnectMs: 300,
      reopen: async () => {
        throw new ForkdError('UNAVAILABLE', 'connection refused');
      },
    }),
    (err: unknown) => err instanceof ForkdError && err.code === 'UNAVAILABLE' && /could not resume the stream of process 5 within/.test(err.message),
  );
  // A server that keeps ending the stream at once is not asked for ever.
  let asked = 0;
  const empty = () => ndjson([]);
  assert.equal(
    await followProcess(ndjson([{ type: 'started', pid: 5, pty: false, token: 1, offset: 0 }]), {}, {
      reconnectMs: 5000,
      reopen: async () => (asked++, empty()),
    }),
    null,
  );
  assert.ok(asked > 1 && asked < 10, `${asked}`);
});
