/**
 * The steps of `forkd setup` (and of `forkd serve`'s start, which runs the
 * same but the first), in the order they run, named as the progress shows
 * them, with about how long each takes on a fresh Debian host with 2 cores
 * and a nearby mirror. Those figures are the first run's estimates only: the
 * CLI remembers how long each step took and estimates the next run from that
 * (on a host already set up, every step takes a second or two).
 */
export const SETUP_STEPS = {
  testPackages: { name: 'packages for the tests (PostgreSQL, a registry, busybox, musl, chromium)', typicalMs: 120_000 },
  systemPackages: { name: 'system packages', typicalMs: 60_000 },
  native: { name: 'guest agent and host tools', typicalMs: 15_000 },
  criu: { name: 'CRIU ≥ 4.2', typicalMs: 60_000 },
  runc: { name: 'runc ≥ 1.3 (user namespaces, the 2025 CVEs fixed)', typicalMs: 30_000 },
  baseRootfs: { name: 'base root filesystem', typicalMs: 240_000 },
  pool: { name: 'storage pool', typicalMs: 5_000 },
  baseTemplate: { name: 'template base', typicalMs: 30_000 },
} as const;

/** The steps in order, for a progress display's plan. */
export function typicalSetupSteps(): { name: string; typicalMs: number }[] {
  return Object.values(SETUP_STEPS).map((s) => ({ name: s.name, typicalMs: s.typicalMs }));
}
