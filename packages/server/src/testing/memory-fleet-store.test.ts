import { fleetStoreConformance } from '../fleet/fleet-store-conformance.js';
import { MemoryFleetStore } from './memory-fleet-store.js';

// The fake the fleet's unit tests use keeps the contract the real stores do.
fleetStoreConformance('memory (unit-test fake)', async () => Object.assign(new MemoryFleetStore(), { close: async () => {} }));
