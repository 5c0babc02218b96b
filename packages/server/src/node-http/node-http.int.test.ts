import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nodeConformance } from '../node-contract/node-conformance.js';
import { disposeNodeDir, isRoot, testConfig } from '../testing/test-node.js';
import { startNodeProcess, stopDaemonProcess } from '../testing/daemon-process.js';
import { NodeHttpClient } from './node-http-client.js';

// The node contract over HTTP: a real `forkd serve --role node` process on a private pool, spoken to by NodeHttpClient.
nodeConformance(
  'NodeHttpClient → forkd serve --role node',
  async () => {
    const dir = await mkdtemp(join(tmpdir(), 'forkd-node-http-'));
    const cfg = testConfig(dir);
    let proc;
    try {
      proc = await startNodeProcess(cfg.env);
    } catch (err) {
      await disposeNodeDir(undefined, dir, cfg.config);
      throw err;
    }
    const p = proc;
    const client = new NodeHttpClient({ url: p.url, token: p.token });
    return {
      node: client,
      async close() {
        client.close();
        await stopDaemonProcess(p, 'SIGTERM');
        await disposeNodeDir(undefined, dir, cfg.config);
      },
    };
  },
  { skip: !isRoot && 'needs root' },
);
