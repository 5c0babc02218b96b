import { storageConformance } from '../node/storage/storage-conformance.js';
import { MemoryStorage } from './memory-storage.js';

storageConformance('MemoryStorage', async () => {
  const storage = await MemoryStorage.open();
  return { storage, close: () => storage.close() };
});
