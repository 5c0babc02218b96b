import { exec } from '../../shared/exec.js';

/**
 * A sandbox's download shaped on the host end of its veth: what leaves that
 * interface enters the sandbox, whether forwarded from outside or sent by
 * a host-side listener. A token bucket (tbf, in every kernel forkd runs
 * on; no ifb or police action needed): packets queue instead of dropping,
 * so TCP settles at the rate. The upload is policed in nftables (see
 * egress-limits-nft.ts). A veth CRIU made at a restore has no qdisc, so
 * this runs at every apply.
 */
export async function shapeDownload(ifname: string, mbps: number | undefined): Promise<void> {
  if (mbps === undefined) {
    // Nothing to remove (or no tc on a host that never limited): an unlimited sandbox needs neither.
    await exec('tc', ['qdisc', 'del', 'dev', ifname, 'root'], { allowFailure: true }).catch(() => {});
    return;
  }
  const bytesPerSecond = mbps * 125_000;
  // At least one full-size burst per timer tick; latency bounds the queue.
  const burst = Math.max(32 * 1024, Math.round(bytesPerSecond / 100));
  await exec('tc', ['qdisc', 'replace', 'dev', ifname, 'root', 'tbf', 'rate', `${Math.round(mbps * 1000)}kbit`, 'burst', String(burst), 'latency', '200ms']);
}
