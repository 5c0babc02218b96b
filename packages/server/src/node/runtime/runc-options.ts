import type { RuntimeNetwork } from '../network/network.js';

/** Default deadline of a dump: far above what a large sandbox's takes here, far below for ever. */
export const CHECKPOINT_DEADLINE_MS = 120_000;

/** What a RuncRuntime is made with: its directories, its tools, and the levers the bench measures one by one. */
export interface RuncOptions {
  /** runc's state directory (tmpfs: containers do not survive a reboot anyway). */
  stateRoot: string;
  /** Where bundles (config.json) are kept; survives daemon restarts. */
  bundleRoot: string;
  /** cgroup parent of every sandbox, e.g. `forkd`. */
  cgroupParent: string;
  /** CRIU ≥ 4.2 (setup's wrapper: forkd-criu-version installed as criu); checkpoint/restore fail without it. */
  criu?: string;
  /** CRIU's action script (forkd-criu-action): named by criuDumpConfig for dumps, runc's hook at a restore (see oci-spec.ts loopbackHook). */
  criuAction?: string;
  /** forkd's CRIU config for dumps, which names the action script (CRIU runs it at every step, a process each): see criuRelay. */
  criuDumpConfig?: string;
  /**
   * The config goes to criu's wrapper instead (FORKD_CRIU_DUMP_CONFIG): it
   * relays runc's dump to CRIU and does the script's steps itself at CRIU's
   * notifications, so CRIU runs none; the config only for a dump it cannot
   * relay (see host-tools/src/criu-version/relay.c).
   */
  criuRelay?: boolean;
  /**
   * With the relay: the next dumps of an init send the request runc built
   * for its first to CRIU without runc (see runc-direct-dump.ts).
   */
  criuDirect?: boolean;
  /** CRIU's log level (0-4) for the dumps the relay carries; -1 (the default): the request's, runc's 4 (debug). */
  criuDumpLogLevel?: number;
  /**
   * Restore lazily: processes resume at once and their memory is served on
   * demand (userfaultfd) and pushed in the background by a `criu lazy-pages`
   * daemon per restore, which exits when everything is in.
   */
  lazyRestore?: boolean;
  /**
   * Images whose pages add up to less restore eagerly: the lazy daemon is one
   * more CRIU start and a socket to wait for, which costs more than copying
   * a small sandbox's memory.
   */
  lazyRestoreMinBytes?: number;
  /**
   * runc starts beside the lazy-pages daemons instead of after they listen
   * (~8 ms of a lazy restore's path): CRIU's connect to them is tried again
   * until they do, by libforkd-uffd (FORKD_LAZY_WAIT_MS).
   */
  lazyConnectWait?: boolean;
  /** On cgroup v1, /sys/fs/cgroup as binds (see oci-spec.ts cgroupMounts); off, runc's tmpfs. */
  cgroupV1Binds?: boolean;
  /** New sandboxes get /dev as the root's own directory bound over itself (see oci-spec.ts devMounts); off, a tmpfs. */
  devInRoot?: boolean;
  /**
   * libforkd-uffd.so, which criu's wrapper preloads when FORKD_UFFD_SOCK is
   * set, and forkd-uffd-broker, which answers it: how a lazy restore into a
   * user namespace gets its userfaultfd without vm.unprivileged_userfaultfd
   * (see host-tools/src/uffd-broker).
   */
  uffdPreload?: string;
  uffdBroker?: string;
  runc?: string;
  /** Owner of each sandbox's network namespace and veth (the runtime tells CRIU about them). */
  network: RuntimeNetwork;
  /** Where idmapped views of sandbox roots are mounted (one directory per key; a tmpfs, so a reboot leaves none). */
  mountRoot: string;
  /** forkd-idmap (host-tools): makes those views. */
  idmapTool: string;
  /** Where CRIU's kernel probe is kept (see criu-kdat.ts); absent: not cached, every CRIU run probes. */
  cacheDir?: string;
  /** The conntrack hash size prepareHost leaves the host with (see conntrack-dump.ts; 0, the default, leaves it alone). */
  conntrackBuckets?: number;
  /** Whether prepareHost turns the cgroup mount option favordynmods on (see cgroups/favor-dynmods.ts; default off). */
  favorDynmods?: boolean;
  /** How long a dump may keep the tree frozen before it is given up (default CHECKPOINT_DEADLINE_MS; see checkpoint). */
  checkpointDeadlineMs?: number;
}

/** Every option given a value: the defaults are a runtime that works on any host (no lazy restore, no host changes). */
export function withRuncDefaults(opts: RuncOptions): Required<RuncOptions> {
  return { runc: 'runc', criu: 'criu', criuAction: '', criuDumpConfig: '', criuRelay: true, criuDirect: true, criuDumpLogLevel: -1, cacheDir: '', conntrackBuckets: 0, favorDynmods: false, lazyRestore: false, lazyRestoreMinBytes: 0, lazyConnectWait: true, cgroupV1Binds: true, devInRoot: true, uffdPreload: '', uffdBroker: '', checkpointDeadlineMs: CHECKPOINT_DEADLINE_MS, ...opts };
}
