import { isIP } from 'node:net';
import { parseImageRef } from '@forkd/protocol';
import { cidrList } from '../shared/cidr.js';

/** Addresses a tenant's pull must not make the server reach: loopback, private, link-local (cloud metadata), CGNAT, multicast and reserved. */
const INTERNAL = cidrList(['0.0.0.0/8', '10.0.0.0/8', '100.64.0.0/10', '127.0.0.0/8', '169.254.0.0/16', '172.16.0.0/12', '192.168.0.0/16', '224.0.0.0/3']);

/**
 * Why a tenant may not build from this image reference, or undefined. A
 * local image (oci-archive:/etc/...) would read the server's files: admin
 * keys only. A registry named by an internal address or `localhost` would
 * make the server a way into the operator's network: admin keys only (a
 * name that resolves to one is the operator's to keep from DNS; see
 * docs/SECURITY.md).
 */
export function imageSourceRefusal(ref: string, admin: boolean): string | undefined {
  if (admin) return undefined;
  const r = parseImageRef(ref);
  if (!r.ok) return undefined; // the schema answers for it
  if (r.ref.kind !== 'registry') return 'images from files on the server (oci-archive:, docker-archive:, oci:) need an admin key';
  const host = r.ref.registry.replace(/:\d+$/, '');
  if (host === 'localhost' || host.endsWith('.localhost') || (isIP(host) === 4 && INTERNAL.check(host, 'ipv4'))) return `registry ${r.ref.registry} is an internal address: an admin key may build from it`;
  return undefined;
}
