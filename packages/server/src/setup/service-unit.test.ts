import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { ForkdError } from '@forkd/protocol';
import { environmentFile, INSTALL_MARKER, parseEnvironmentFile, serviceUnit, wrapperScript } from './service-unit.js';

const opts = { node: '/usr/bin/node', checkout: '/opt/forkd' };

/** `Key=value` lines of one [Section] of a unit. */
function section(unit: string, name: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  let current = '';
  for (const line of unit.split('\n')) {
    const header = /^\[(.+)\]$/.exec(line);
    if (header) current = header[1]!;
    const kv = /^([A-Za-z]+)=(.*)$/.exec(line);
    if (current === name && kv) out.set(kv[1]!, [...(out.get(kv[1]!) ?? []), kv[2]!]);
  }
  return out;
}

const systemdAnalyze = spawnSync('systemd-analyze', ['--version']).status === 0;

/** systemd-analyze's findings about `unit` (written as forkd.service): '' when it has none. */
function verify(unit: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'forkd-unit-'));
  try {
    writeFileSync(join(dir, 'forkd.service'), unit);
    const r = spawnSync('systemd-analyze', ['verify', join(dir, 'forkd.service')], { encoding: 'utf8' });
    return `${r.status === 0 ? '' : `exit ${r.status}\n`}${r.stderr}`.trim();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('forkd.service', () => {
  test('runs forkd serve from the checkout with the CLI flags, under the environment file', () => {
    const s = section(serviceUnit(opts), 'Service');
    assert.deepEqual(s.get('ExecStart'), ['/usr/bin/node --experimental-websocket --no-warnings=ExperimentalWarning --enable-source-maps /opt/forkd/packages/cli/dist/main.js serve']);
    assert.deepEqual(s.get('EnvironmentFile'), ['-/etc/forkd/forkd.env']);
    assert.deepEqual(s.get('Type'), ['exec']);
  });

  test('stops only the daemon (sandboxes and the netns holder outlive it), restarts on failure, logs to the journal', () => {
    const s = section(serviceUnit(opts), 'Service');
    assert.deepEqual(s.get('KillMode'), ['process']);
    assert.deepEqual(s.get('KillSignal'), ['SIGTERM']);
    assert.deepEqual(s.get('Restart'), ['on-failure']);
    assert.deepEqual(s.get('LimitNOFILE'), ['1048576']);
    assert.deepEqual(s.get('StandardOutput'), ['journal']);
    assert.equal(s.get('ExecStop'), undefined, 'the daemon stops on SIGTERM; an ExecStop would need its own way to reach it');
    assert.deepEqual(section(serviceUnit(opts), 'Install').get('WantedBy'), ['multi-user.target']);
  });

  test('carries the marker uninstall looks for; the wrapper passes its arguments through', () => {
    assert.ok(serviceUnit(opts).includes(INSTALL_MARKER));
    const w = wrapperScript(opts);
    assert.ok(w.startsWith('#!/bin/sh\n') && w.includes(INSTALL_MARKER));
    assert.match(w, /\nexec \/usr\/bin\/node --experimental-websocket .* \/opt\/forkd\/packages\/cli\/dist\/bundle\/forkd\.js "\$@"\n$/);
    assert.doesNotMatch(w, /--enable-source-maps/, 'each call would read the bundle\'s maps');
  });

  test('a path systemd or sh would read as more than a path is refused', () => {
    for (const checkout of ['/opt/my forkd', 'relative', '/opt/%h', '/opt/$x', '/opt/a"b', "/opt/a'b", '/opt/a\\b', '/opt/a;b', '/opt/a\nb']) {
      assert.throws(() => serviceUnit({ ...opts, checkout }), (e: unknown) => e instanceof ForkdError && e.code === 'INVALID_ARGUMENT', checkout);
      assert.throws(() => wrapperScript({ ...opts, checkout }), ForkdError);
    }
    assert.throws(() => serviceUnit({ ...opts, node: 'node' }), ForkdError);
  });

  test('systemd-analyze verify finds nothing to say about it', { skip: !systemdAnalyze && 'systemd-analyze is not installed here' }, () => {
    const node = execFileSync('sh', ['-c', 'command -v node'], { encoding: 'utf8' }).trim();
    assert.equal(verify(serviceUnit({ ...opts, node })), '');
    // The check can fail: a setting systemd cannot parse is reported.
    assert.match(verify(serviceUnit({ ...opts, node }).replace('KillMode=process', 'KillMode=sandboxes')), /kill mode/i);
  });
});

describe('forkd.env', () => {
  test('holds the FORKD_* daemon settings of the shell, not client ones or others', () => {
    const text = environmentFile({ FORKD_POOL: '/srv/pool', FORKD_URL: 'http://x', FORKD_API_KEY: 'k', FORKD_TENANT: 't', FORKD_DEBUG: '1', HOME: '/root', FORKD_PORT: '9000' });
    assert.equal(text.split('\n')[0]!.startsWith('# '), true);
    assert.deepEqual(parseEnvironmentFile(text), { FORKD_POOL: '/srv/pool', FORKD_PORT: '9000' });
    assert.match(text, /^FORKD_POOL=\/srv\/pool$/m);
  });

  test('quotes what is not plain; a line break is refused', () => {
    const text = environmentFile({ FORKD_X: 'a b"$`\\c' });
    assert.match(text, /^FORKD_X="a b\\"\\\$\\`\\\\c"$/m);
    assert.throws(() => environmentFile({ FORKD_X: 'a\nFORKD_POOL=/' }), ForkdError);
  });

  test('reads hand-written files: comments, quotes, export', () => {
    assert.deepEqual(parseEnvironmentFile(`# c\n  FORKD_A=1\nexport FORKD_B='x y'\nFORKD_C="q\\"r"\nnot a line\nFORKD_D="open\n`), { FORKD_A: '1', FORKD_B: 'x y', FORKD_C: 'q"r' });
  });

  test('a value with a Unicode line or paragraph separator reads back (JS regex . stops at them; systemd does not)', () => {
    for (const v of ['\u2028', 'a\u2029b']) assert.deepEqual(parseEnvironmentFile(environmentFile({ FORKD_A: v })), { FORKD_A: v });
  });

  test('what it writes it reads back (property)', () => {
    const name = fc.stringMatching(/^FORKD_[A-Z0-9_]{1,12}$/).filter((n) => !['FORKD_URL', 'FORKD_API_KEY', 'FORKD_TENANT', 'FORKD_DEBUG'].includes(n));
    const value = fc.string({ unit: 'binary', maxLength: 40 }).filter((v) => !/[\n\r\0]/.test(v));
    fc.assert(
      fc.property(fc.dictionary(name, value), (env) => {
        // Leading and trailing blanks of a bare value are not kept by systemd either: those are quoted.
        assert.deepEqual(parseEnvironmentFile(environmentFile(env)), { ...env });
      }),
      { numRuns: 500 },
    );
  });

  test('never throws on arbitrary bytes (property)', () => {
    fc.assert(fc.property(fc.string({ unit: 'binary', maxLength: 400 }), (text) => void parseEnvironmentFile(text)), { numRuns: 500 });
  });
});
