/**
 * A counter that lives in process memory and mirrors itself to /tmp/count
 * every 20 ms. SIGUSR1 adds a million to it: a change that exists only in
 * memory, so a restore shows whether memory came back from before or after.
 */
export const JUMPING_COUNTER = [
  'python3',
  '-c',
  [
    'import os, signal, time',
    'i = 0',
    'def jump(*_):',
    '  global i',
    '  i += 1000000',
    'signal.signal(signal.SIGUSR1, jump)',
    'while True:',
    '  i += 1',
    "  open('/tmp/count.tmp', 'w').write(str(i))",
    "  os.rename('/tmp/count.tmp', '/tmp/count')",
    '  time.sleep(0.02)',
  ].join('\n'),
];

/** Above this the counter jumped (SIGUSR1) since it started. */
export const JUMPED = 1_000_000;

/** The shell command that makes the counter jump. */
export const JUMP = ['pkill', '-USR1', '-f', 'signal.SIGUSR1'];
