import dns, { type LookupAddress, type LookupOptions } from 'node:dns';

/**
 * Preloaded into a test's child process (`node --import …/loopback-resolver.js`):
 * every name under FORKD_TEST_RESOLVE's domain (`<domain>=<address>`)
 * resolves to that loopback address, as wildcard DNS would for a real
 * deployment; every other name fails, so nothing leaves the host. The
 * process's own resolver only: no /etc/hosts, no system configuration.
 */
const [domain, address] = (process.env.FORKD_TEST_RESOLVE ?? '').split('=');
if (!domain || !address || !/^127\./.test(address)) throw new Error('FORKD_TEST_RESOLVE: <domain>=<127.x.y.z>');

type Callback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

function lookup(host: string, options: number | LookupOptions | Callback, callback?: Callback): void {
  const cb = (typeof options === 'function' ? options : callback)!;
  const all = typeof options === 'object' && options.all === true;
  const name = host.toLowerCase().replace(/\.$/, '');
  if (name !== domain && !name.endsWith(`.${domain}`)) {
    const err: NodeJS.ErrnoException = Object.assign(new Error(`getaddrinfo ENOTFOUND ${host} (test resolver: only *.${domain})`), { code: 'ENOTFOUND', hostname: host });
    return void process.nextTick(cb, err, all ? [] : '', 0);
  }
  process.nextTick(() => (all ? cb(null, [{ address: address!, family: 4 }]) : cb(null, address!, 4)));
}

(dns as { lookup: unknown }).lookup = lookup;
