import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { loadConfig, type ForkdConfig } from '../shared/config.js';
import type { HealthAnswer, HostView, ToolOutput } from './host-view.js';
import { hostView } from './host-view.js';
import type { PoolSpace } from '../node/storage/pool-space.js';

/** Tests' stand-in for a host: its files as a tree (undefined: absent), its programs, statfs and daemon as answers. */
export interface FakeHostSpec {
  files: Record<string, string | undefined>;
  tools?: Record<string, ToolOutput>;
  space?: PoolSpace;
  health?: HealthAnswer;
  /** Directories made with these modes (after the files). */
  dirs?: Record<string, number>;
}

const FSID = '9592cd38-1246-40cb-94dd-abc8cf7c7cdc';
const GiB = 2 ** 30;

/** A host on which every check passes (cgroup v2, Linux 6.12, a mounted pool with simple quotas, a synced clock). */
export function healthyHost(): FakeHostSpec {
  return {
    files: {
      '/proc/sys/kernel/osrelease': '6.12.38+deb13-amd64\n',
      '/proc/sys/user/max_user_namespaces': '63704\n',
      '/proc/self/ns/user': '',
      '/proc/self/status': 'Name:\tcat\nSeccomp:\t0\nSeccomp_filters:\t0\n',
      '/proc/sys/kernel/seccomp/actions_avail': 'kill_process kill_thread trap errno user_notif trace log allow\n',
      '/proc/sys/vm/unprivileged_userfaultfd': '0\n',
      '/proc/filesystems': 'nodev\tsysfs\nnodev\tproc\n\text4\n\tbtrfs\n',
      '/proc/self/mountinfo': '22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n25 22 0:22 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot,favordynmods\n46 22 0:40 / /var/lib/forkd/pool rw,nodev,noatime - btrfs /dev/loop0 rw,compress=zstd:1\n24 22 0:21 / /dev/shm rw,nosuid,nodev - tmpfs tmpfs rw,size=1024k,huge=within_size\n',
      '/sys/kernel/mm/transparent_hugepage/shmem_enabled': 'always within_size advise [never] deny force\n',
      '/sys/kernel/cgroup/features': 'nsdelegate\nfavordynmods\nmemory_localevents\nmemory_recursiveprot\n',
      '/proc/net/route': 'Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\neth0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n',
      '/proc/sys/net/ipv4/conf/eth0/forwarding': '1\n',
      '/proc/net/tcp': '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   0: 0100007F:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0000000000000000 100 0 0 10 0\n',
      '/proc/net/tcp6': '  sl  local_address                         remote_address                        st\n',
      '/dev/userfaultfd': '',
      '/dev/loop-control': '',
      '/sys/fs/cgroup/cgroup.controllers': 'cpuset cpu io memory hugetlb pids rdma misc\n',
      '/sys/fs/btrfs/features/simple_quota': '0\n',
      [`/sys/fs/btrfs/${FSID}/devices/loop0`]: '',
      [`/sys/fs/btrfs/${FSID}/qgroups/enabled`]: '1\n',
      [`/sys/fs/btrfs/${FSID}/qgroups/mode`]: 'squota\n',
      [`/sys/fs/btrfs/${FSID}/nodesize`]: '8192\n',
      '/run/systemd/timesync/synchronized': '',
      '/var/lib/forkd/pool.img': '',
    },
    tools: {
      runc: { kind: 'ran', stdout: 'runc version 1.3.3\ncommit: v1.3.3\nspec: 1.2.1\n' },
      criu: { kind: 'ran', stdout: 'Version: 4.2\n' },
    },
    space: { sizeBytes: 64 * GiB, freeBytes: 60 * GiB },
    health: { kind: 'down', detail: 'ECONNREFUSED' },
  };
}

/** The same host with `files` changed (undefined: removed). */
export function withFiles(spec: FakeHostSpec, files: Record<string, string | undefined>): FakeHostSpec {
  return { ...spec, files: { ...spec.files, ...files } };
}

/** The v1 layout: a hierarchy per controller, swap accounting on. */
export const CGROUP_V1: Record<string, string | undefined> = {
  '/sys/fs/cgroup/cgroup.controllers': undefined,
  ...Object.fromEntries(['cpu', 'cpuacct', 'pids', 'freezer'].map((c) => [`/sys/fs/cgroup/${c}/tasks`, ''])),
  '/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes': '9223372036854771712\n',
};

export interface FakeHost {
  host: HostView;
  config: ForkdConfig;
  dispose(): Promise<void>;
}

/** Writes the spec's tree into a temporary directory and returns a HostView rooted there, with default config. */
export async function fakeHost(spec: FakeHostSpec, env: NodeJS.ProcessEnv = {}): Promise<FakeHost> {
  const root = await mkdtemp(join(tmpdir(), 'forkd-doctor-'));
  for (const [path, content] of Object.entries(spec.files)) {
    if (content === undefined) continue;
    await mkdir(dirname(join(root, path)), { recursive: true });
    await writeFile(join(root, path), content);
  }
  for (const [path, mode] of Object.entries(spec.dirs ?? {})) {
    await mkdir(join(root, path), { recursive: true });
    await chmod(join(root, path), mode);
  }
  const host = hostView(root, {
    run: async (path) => spec.tools?.[path.split('/').pop()!] ?? { kind: 'missing' },
    space: () => spec.space,
    health: async () => spec.health ?? { kind: 'down', detail: 'ECONNREFUSED' },
  });
  const config = loadConfig({ FORKD_STATE_DIR: '/var/lib/forkd', FORKD_CACHE_DIR: '/var/lib/forkd/cache', ...env });
  return { host, config, dispose: () => rm(root, { recursive: true, force: true }) };
}
