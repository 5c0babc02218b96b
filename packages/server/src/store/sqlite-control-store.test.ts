import { after } from 'node:test';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { controlStoreConformance } from './control-store-conformance.js';
import { SqliteControlStore } from './sqlite-control-store.js';

const dir = await mkdtemp(join(tmpdir(), 'forkd-control-store-'));
let n = 0;
after(() => rm(dir, { recursive: true, force: true }));

controlStoreConformance('SQLite', async () => new SqliteControlStore(join(dir, `control-${++n}.db`)));
