/**
 * Which ioctl(2) requests a sandbox may make: all but filesystem
 * administration. Btrfs answers any caller with write access to a
 * directory: a root inside could make a subvolume (BTRFS_IOC_SUBVOL_CREATE),
 * whose qgroup is not its sandbox's, fill it past the disk quota, and leave a
 * root the host could not delete. So the whole Btrfs range is closed but the
 * three calls it shares with the VFS (`cp --reflink`, dedupe tools), and so
 * are the VFS's freeze, thaw, trim and shutdown (those also need a capability
 * sandboxes lack: closed twice). ext4's and XFS's own administration calls
 * are not named: a sandbox sees no such filesystem (its root is in the Btrfs
 * pool, the rest tmpfs and kernel filesystems), they need CAP_SYS_ADMIN, and
 * each name costs every ioctl a few more filter instructions (the 24 of them
 * would double the rules).
 *
 * How it is written down is forced by libseccomp (tried in a real runc,
 * 1.3.6 with libseccomp 2.6.1, and 1.1.5 with 2.5.4): an unconditional rule
 * for a syscall silently drops every conditional rule of another action for
 * it, and a condition that masks nothing counts as unconditional; between
 * overlapping conditional rules of different actions, which one wins is an
 * ordering detail of the library. So there is no "allow ioctl, but refuse
 * these": the allowed requests are written as a set of disjoint
 * (mask, value) rules covering everything not refused, all ALLOW, and what
 * none of them matches meets the filter's default (EPERM). Order cannot
 * matter, and the result is checked in a sandbox (adversarial-syscalls).
 *
 * Requests match on their type and number (the low 16 bits) whatever their
 * direction and size bits: a variant the kernel would not know is refused
 * too. The filter sees ioctl's request as 64 bits while the kernel reads the
 * low 32, so every rule masks the high bits away: setting them changes
 * nothing.
 */

/** A set of requests: those whose bits under `mask` equal `value`. */
export interface IoctlMatch {
  mask: number;
  value: number;
}

interface NamedIoctls {
  /** The ioctl type byte (the `0x94` of `_IOW(0x94, 14, …)`). */
  type: number;
  /** Request numbers within the type; undefined: every one. */
  nrs?: Record<string, number>;
}

/** The VFS's 'X' (shared with XFS), as `_IOWR('X', 119, int)` writes it. */
const X = 0x58;
const BTRFS = 0x94;

/** Refused, by type and number. */
const REFUSED_IOCTLS: Record<string, NamedIoctls> = {
  // Subvolumes, snapshots, qgroups, quota, balance, devices, send/receive, scrub, defrag, labels, …
  btrfs: { type: BTRFS },
  vfs: { type: X, nrs: { FIFREEZE: 119, FITHAW: 120, FITRIM: 121, FS_IOC_SHUTDOWN: 125 } },
};

/** Allowed although inside a refused range: the VFS calls numbered in Btrfs's type. */
const ALLOWED_IN_REFUSED: Record<string, number> = {
  FICLONE: (BTRFS << 8) | 9,
  FICLONERANGE: (BTRFS << 8) | 13,
  FIDEDUPERANGE: (BTRFS << 8) | 54,
};

const TYPE_NR_BITS = 16;

function refusedSets(): IoctlMatch[] {
  return Object.values(REFUSED_IOCTLS).flatMap(({ type, nrs }) =>
    nrs ? Object.values(nrs).map((nr) => ({ mask: 0xffff, value: (type << 8) | nr })) : [{ mask: 0xff00, value: type << 8 }],
  );
}

/** Whether every request matching `a` also matches `b`. */
function within(a: IoctlMatch, b: IoctlMatch): boolean {
  return (b.mask & ~a.mask) === 0 && (a.value & b.mask) === b.value;
}

function overlaps(a: IoctlMatch, b: IoctlMatch): boolean {
  return ((a.value ^ b.value) & a.mask & b.mask) === 0;
}

/**
 * The allowed requests as disjoint sets: the region (all requests to begin
 * with) is kept whole when nothing refused touches it, dropped when it is
 * all refused, and otherwise split on its next bit, highest first.
 */
export function allowedIoctls(): IoctlMatch[] {
  const refused = refusedSets();
  const excepted = Object.values(ALLOWED_IN_REFUSED).map((value) => ({ mask: 0xffff, value }));
  const out: IoctlMatch[] = [];
  const cover = (region: IoctlMatch, bit: number): void => {
    const allRefused = refused.some((r) => within(region, r)) && !excepted.some((e) => overlaps(region, e));
    if (allRefused) return;
    const allAllowed = !refused.some((r) => overlaps(region, r)) || excepted.some((e) => within(region, e));
    if (allAllowed) {
      out.push(region);
      return;
    }
    const b = 1 << bit;
    cover({ mask: region.mask | b, value: region.value }, bit - 1);
    cover({ mask: region.mask | b, value: region.value | b }, bit - 1);
  };
  cover({ mask: 0, value: 0 }, TYPE_NR_BITS - 1);
  return out;
}
