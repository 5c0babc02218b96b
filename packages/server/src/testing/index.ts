/** Test fixtures for integration tests in other packages (not part of the public API). */
export { createTestNode, disposeNodeDir, testConfig, isRoot, hostFootprint, type TestNode } from './test-node.js';
export { startDaemonProcess, startNodeProcess, stopDaemonProcess, CLI, NODE_FLAGS, type DaemonProcess, type NodeProcess } from './daemon-process.js';
export { run, waitFor } from './helpers.js';
export { startE2bDaemon, type E2bDaemon } from './e2b-daemon.js';
export { randomPort } from './daemon-process.js';
/** Storage internals the benchmark (packages/bench) drives directly to measure what disk quotas cost. */
export { ensurePool, unmountPool, type PoolOptions } from '../node/storage/btrfs-pool.js';
export { BtrfsStorage } from '../node/storage/btrfs-storage.js';
export { btrfsQuotas, type DiskQuotas, type QuotaMode } from '../node/storage/disk-quota.js';
export { enableQuotas, poolQuotas } from '../node/storage/quota-mode.js';
export { startTestInternet, FETCH_PY, type TestInternet } from './test-internet.js';
export { assertStillServing } from './still-serving.js';
export { runSdkChild, type SdkChildTarget } from './sdk-child.js';
export { startCodeInterpreterDaemon, type CodeInterpreterDaemon } from './code-interpreter-daemon.js';
export { writeTestImage, debianLayer } from './test-images.js';
