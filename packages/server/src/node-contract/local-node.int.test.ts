import { createTestNode, isRoot } from '../testing/test-node.js';
import { nodeConformance } from './node-conformance.js';

// The node contract in process: the LocalNode a private test node wires over its SandboxManager.
nodeConformance(
  'LocalNode',
  async () => {
    const t = await createTestNode();
    return { node: t.service, close: () => t.dispose() };
  },
  { skip: !isRoot && 'needs root' },
);
