import { test } from 'node:test';
import assert from 'node:assert/strict';
import { selectedShmemMode, tmpfsHuge } from './staging-huge.js';

test('tmpfsHuge: any huge= but never; selectedShmemMode: the bracketed mode', () => {
  assert.equal(tmpfsHuge({ superOptions: ['rw', 'huge=within_size'] }), true);
  assert.equal(tmpfsHuge({ superOptions: ['rw', 'huge=always'] }), true);
  assert.equal(tmpfsHuge({ superOptions: ['rw', 'huge=advise'] }), true);
  assert.equal(tmpfsHuge({ superOptions: ['rw', 'huge=never'] }), false);
  assert.equal(tmpfsHuge({ superOptions: ['rw', 'size=1g'] }), false);
  assert.equal(selectedShmemMode('always within_size advise [never] deny force\n'), 'never');
  assert.equal(selectedShmemMode('always within_size advise never [deny] force'), 'deny');
  assert.equal(selectedShmemMode(''), undefined);
  assert.equal(selectedShmemMode('garbage'), undefined);
});
