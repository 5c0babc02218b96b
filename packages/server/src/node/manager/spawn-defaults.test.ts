import { test } from 'node:test';
import assert from 'node:assert/strict';
import { shellCommandOf, spawnDefaultsOf, withSpawnDefaults } from './spawn-defaults.js';

test("bash command lines run through an image's own shell; an argv of its own is left alone", () => {
  const sh = { shell: ['/bin/sh', '-c'] };
  assert.deepEqual(withSpawnDefaults({ argv: ['/bin/bash', '-lc', 'echo hi'] }, sh).argv, ['/bin/sh', '-c', 'echo hi']);
  assert.deepEqual(withSpawnDefaults({ argv: ['/bin/bash', '-l', '-c', 'ls'] }, sh).argv, ['/bin/sh', '-c', 'ls']);
  assert.deepEqual(withSpawnDefaults({ argv: ['/bin/bash', 'script.sh'] }, sh).argv, ['/bin/bash', 'script.sh']);
  assert.deepEqual(withSpawnDefaults({ argv: ['/app/hello'] }, sh).argv, ['/app/hello']);
  assert.deepEqual(withSpawnDefaults({ argv: ['/bin/bash', '-lc', 'x'] }, undefined).argv, ['/bin/bash', '-lc', 'x']);
  assert.equal(shellCommandOf(['/bin/bash', '-lc']), undefined);
});

test("an image's WorkingDir and User apply only where the call names none", () => {
  const d = { cwd: '/app', user: 'nobody' };
  assert.deepEqual(withSpawnDefaults({ argv: ['id'] }, d), { argv: ['id'], cwd: '/app', user: 'nobody' });
  assert.deepEqual(withSpawnDefaults({ argv: ['id'], cwd: '/', user: 'root' }, d), { argv: ['id'], cwd: '/', user: 'root' });
  assert.equal(spawnDefaultsOf({ ref: 'x', env: { A: '1' } }), undefined);
  assert.deepEqual(spawnDefaultsOf({ ref: 'x', env: {}, user: 'u' }), { user: 'u' });
});
