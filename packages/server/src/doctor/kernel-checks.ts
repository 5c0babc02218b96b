import type { HostCheck } from './host-check.js';
import { finding, kernelAtLeast, kernelVersion } from './host-check.js';

/** Idmapped mounts on Btrfs (how a user namespace's root owns the template's files) came with 5.15. */
const MIN_KERNEL: [number, number] = [5, 15];

export const kernelCheck: HostCheck = async ({ host }) => {
  const k = await kernelVersion(host);
  if (!k) return finding('kernel', 'error', 'the kernel release could not be read (/proc/sys/kernel/osrelease)', 'run forkd doctor on the host itself, with /proc mounted');
  if (!kernelAtLeast(k, ...MIN_KERNEL)) return finding('kernel', 'error', `Linux ${k.release} is older than ${MIN_KERNEL.join('.')}`, `boot Linux ≥ ${MIN_KERNEL.join('.')} (Debian 12's 6.1 or newer)`);
  return finding('kernel', 'ok', `Linux ${k.release}`);
};

export const userNamespacesCheck: HostCheck = async ({ host, config }) => {
  if (!config.userns) return finding('user-namespaces', 'warn', 'FORKD_USERNS=0: root in a sandbox is root on the host', 'unset FORKD_USERNS (user namespaces are the default)');
  const max = (await host.read('/proc/sys/user/max_user_namespaces'))?.trim();
  if ((await host.presence('/proc/self/ns/user')) !== 'present') return finding('user-namespaces', 'error', 'the kernel has no user namespaces (CONFIG_USER_NS)', 'boot a kernel built with CONFIG_USER_NS, or set FORKD_USERNS=0 (root in a sandbox is then root on the host)');
  if (max === '0') return finding('user-namespaces', 'error', 'user namespaces are switched off (user.max_user_namespaces = 0)', 'sysctl -w user.max_user_namespaces=65536 (and in /etc/sysctl.d/ to keep it)');
  return finding('user-namespaces', 'ok', `available (user.max_user_namespaces = ${max ?? 'unknown'})`);
};

export const idmappedMountsCheck: HostCheck = async ({ host, config }) => {
  if (!config.userns) return finding('idmapped-mounts', 'skip', 'not used (FORKD_USERNS=0)');
  const k = await kernelVersion(host);
  if (!k || !kernelAtLeast(k, ...MIN_KERNEL)) return finding('idmapped-mounts', 'error', `Btrfs idmapped mounts need Linux ≥ ${MIN_KERNEL.join('.')}`, `boot Linux ≥ ${MIN_KERNEL.join('.')}`);
  return finding('idmapped-mounts', 'ok', `Btrfs idmapped mounts (Linux ≥ ${MIN_KERNEL.join('.')})`);
};

/** See RuncRuntime: lazy restores into a user namespace get their userfaultfd from /dev/userfaultfd through forkd's broker. */
export const userfaultfdCheck: HostCheck = async ({ host, config }) => {
  if (!config.lazyRestore) return finding('userfaultfd', 'skip', 'not used (FORKD_LAZY_RESTORE=0: restores load all memory first)');
  if ((await host.presence('/dev/userfaultfd')) === 'present') return finding('userfaultfd', 'ok', '/dev/userfaultfd: lazy restores through forkd\'s broker');
  if ((await host.read('/proc/sys/vm/unprivileged_userfaultfd'))?.trim() === '1') {
    return finding('userfaultfd', 'warn', 'no /dev/userfaultfd; vm.unprivileged_userfaultfd=1 lets every host user open a userfaultfd', 'boot Linux ≥ 6.1 (/dev/userfaultfd) and set vm.unprivileged_userfaultfd=0');
  }
  return finding('userfaultfd', 'warn', 'no /dev/userfaultfd: restores load all memory first (~100 ms slower resume and fork)', 'boot Linux ≥ 6.1 (CONFIG_USERFAULTFD), or set FORKD_LAZY_RESTORE=0 to say so');
};

export const seccompCheck: HostCheck = async ({ host }) => {
  const status = (await host.read('/proc/self/status')) ?? '';
  const actions = (await host.read('/proc/sys/kernel/seccomp/actions_avail'))?.trim();
  if (!/^Seccomp:/m.test(status) || !actions) return finding('seccomp', 'error', 'the kernel has no seccomp filters: runc cannot apply the sandboxes\' syscall profile', 'boot a kernel built with CONFIG_SECCOMP_FILTER');
  if (!actions.split(/\s+/).includes('errno')) return finding('seccomp', 'error', `seccomp cannot return errors (actions: ${actions})`, 'boot a kernel with the SECCOMP_RET_ERRNO action (any current one)');
  return finding('seccomp', 'ok', 'seccomp filters');
};

export const btrfsCheck: HostCheck = async ({ host }) => {
  const fs = (await host.read('/proc/filesystems')) ?? '';
  if (/\sbtrfs$/m.test(fs)) return finding('btrfs', 'ok', 'Btrfs in the kernel');
  const k = (await host.read('/proc/sys/kernel/osrelease'))?.trim();
  if (k && (await host.presence(`/lib/modules/${k}/kernel/fs/btrfs`)) === 'present') return finding('btrfs', 'ok', 'Btrfs as a module (loaded by the pool\'s mount)');
  return finding('btrfs', 'error', 'the kernel has no Btrfs: there can be no storage pool', 'install a kernel with Btrfs (CONFIG_BTRFS_FS), or modprobe btrfs');
};

/** Only a pool of a loop image (no FORKD_POOL) needs them. */
export const loopDevicesCheck: HostCheck = async ({ host, config }) => {
  if (!config.pool.image) return finding('loop-devices', 'skip', `not used (the pool is FORKD_POOL ${config.pool.mountPoint})`);
  if ((await host.presence('/dev/loop-control')) === 'present') return finding('loop-devices', 'ok', '/dev/loop-control');
  return finding('loop-devices', 'error', `no loop devices (/dev/loop-control): the pool's image ${config.pool.image} cannot be mounted`, 'modprobe loop (in a container: give it /dev/loop-control and the loop devices), or set FORKD_POOL to a Btrfs path');
};
