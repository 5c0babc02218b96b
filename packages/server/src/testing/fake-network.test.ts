import { networkConformance } from '../node/network/network-conformance.js';
import { FakeNetwork } from './fake-network.js';

let pids = 1000;

networkConformance('FakeNetwork', async () => {
  const network = new FakeNetwork();
  return {
    network,
    echo: async (id, _path, port) => {
      const stop = network.listen(id, port, (s) => s.pipe(s));
      return async () => stop();
    },
    process: async () => ({ pid: ++pids, stop: async () => {} }),
    sameNamespace: async (id, path, pid) => network.namespaces.get(id)?.pid === pid && path === network.path(id),
    hostLinks: async () => [...network.hostLinks],
    close: async () => {},
  };
});
