/** Test fixtures for integration tests in other packages (not part of the public API). */
export { createTestNode, disposeNodeDir, testConfig, isRoot, hostFootprint, type TestNode } from './test-node.js';
export { startDaemonProcess, stopDaemonProcess, CLI, NODE_FLAGS, type DaemonProcess } from './daemon-process.js';
export { run, waitFor } from './helpers.js';
