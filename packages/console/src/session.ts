/** Where the console keeps the API key: this tab's session only (never localStorage or a cookie). */
export interface KeyStore {
  get(): string | undefined;
  set(key: string): void;
  clear(): void;
}

const ITEM = 'forkd.apiKey';

export function sessionKeyStore(storage: Pick<Storage, 'getItem' | 'setItem' | 'removeItem'>): KeyStore {
  return {
    get: () => storage.getItem(ITEM) || undefined,
    set: (key) => storage.setItem(ITEM, key),
    clear: () => storage.removeItem(ITEM),
  };
}
