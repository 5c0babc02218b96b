import { SHMEM_ENABLED, stagingHugeState } from '../node/storage/staging-huge.js';
import { finding, type HostCheck } from './host-check.js';

/** Whether the CRIU staging directory's tmpfs gives large pages to the memory images written there (the daemon remounts it at start unless told to leave it). */
export const stagingPagesCheck: HostCheck = async ({ host, config }) => {
  const state = stagingHugeState((await host.read('/proc/self/mountinfo')) ?? '', (await host.read(SHMEM_ENABLED)) ?? '', config.stagingDir);
  if (state.outcome === 'unsupported') return finding('staging-pages', 'ok', 'the kernel gives tmpfs no large pages: each snapshot writes and hashes the sandbox\'s memory 4 KiB at a time');
  if (state.outcome === 'not-tmpfs') return finding('staging-pages', 'ok', `the CRIU staging directory ${config.stagingDir} is on no tmpfs: left as it is`);
  const path = state.mount.mountPoint;
  if (state.outcome === 'on') return finding('staging-pages', 'ok', `${path} gives large pages to files that fill them`);
  if (config.stagingHugePages === 'enable') return finding('staging-pages', 'ok', `${path} has no large pages now; forkd serve remounts it with huge=within_size at start`);
  return finding('staging-pages', 'warn', `${path} has no large pages (FORKD_STAGING_HUGE_PAGES=leave): each snapshot writes and hashes the sandbox's memory 4 KiB at a time (a 100 MB freeze ~12 % longer here)`, `mount -o remount,huge=within_size ${path}, or unset FORKD_STAGING_HUGE_PAGES for forkd to do it`);
};
