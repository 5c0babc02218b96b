import { createTestNode, isRoot } from '../testing/test-node.js';
import { LocalNode } from '../node/local-node.js';
import { nodeConformance } from './node-conformance.js';

// The node contract in process: LocalNode over a private test node's SandboxManager.
nodeConformance(
  'LocalNode',
  async () => {
    const t = await createTestNode();
    return { node: new LocalNode(t.manager), close: () => t.dispose() };
  },
  { skip: !isRoot && 'needs root' },
);
