import { openRuncHarness } from './runc-test-harness.js';
import { isRoot } from '../../testing/test-node.js';
import { runtimeConformance } from './runtime-conformance.js';

/** RuncRuntime against the Runtime contract (see runc-test-harness.ts). */
runtimeConformance('RuncRuntime', () => openRuncHarness(), { skip: !isRoot && 'needs root (runc, CRIU, a Btrfs pool)' });
