/*
 * forkd-qgroup: the Btrfs quota calls of a sandbox's start, by ioctl and
 * sysfs, in one static process (the btrfs tool took three runs, ~40 ms on a
 * busy host, on every create, fork, resume and rewind), and turning simple
 * quotas on (Debian 12's btrfs-progs predates them).
 *
 *   forkd-qgroup enable-simple POOL          exit 4: the kernel has no simple quotas
 *   forkd-qgroup disable POOL
 *   forkd-qgroup show POOL VOLUME            -> "QGROUP REFERENCED EXCLUSIVE LIMIT|none"
 *       (with simple quotas, the volume's lineage group if it has one)
 *   forkd-qgroup limit POOL VOLUME BYTES|none
 *   forkd-qgroup start POOL VOLUME EXACT HEADROOM
 *       full qgroups: limit = max(EXACT, referenced) + HEADROOM; prints "ID REFERENCED"
 *   forkd-qgroup limit-id POOL QGROUP BYTES|none
 *   forkd-qgroup group POOL VOLUME           -> "1/N", the volume's lineage group
 *   forkd-qgroup start-lineage POOL VOLUME GROUP|- EXACT HEADROOM  (see lineage.c)
 *   forkd-qgroup sweep POOL                  (see lineage.c)
 *
 * VOLUME's subvolume id comes from BTRFS_IOC_INO_LOOKUP; its numbers from
 * /sys/fs/btrfs/FSID/qgroups/L_ID (the kernel's live counters). Limits are
 * set through POOL's top-level fd, never through the volume: a transaction
 * joined on a volume over its limit would fail with EDQUOT. Exit 3: no
 * qgroup (quotas off, or not a subvolume).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/btrfs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include "qgroup.h"

/* Linux 6.7 (uapi/linux/btrfs.h); Debian 12's headers lack it. */
#ifndef BTRFS_QUOTA_CTL_ENABLE_SIMPLE_QUOTA
#define BTRFS_QUOTA_CTL_ENABLE_SIMPLE_QUOTA 4
#endif
/* The objectid of a subvolume's root directory (linux/btrfs_tree.h). */
#define FIRST_FREE_OBJECTID 256ULL

int fail(const char *what) {
  fprintf(stderr, "forkd-qgroup: %s: %s\n", what, strerror(errno));
  return 1;
}

int open_dir(const char *path) {
  return open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

int subvol_id(const char *path, uint64_t *id) {
  int fd = open_dir(path);
  if (fd < 0) return -1;
  struct btrfs_ioctl_ino_lookup_args a;
  memset(&a, 0, sizeof(a));
  a.objectid = FIRST_FREE_OBJECTID;
  int r = ioctl(fd, BTRFS_IOC_INO_LOOKUP, &a);
  close(fd);
  if (r < 0) return -1;
  *id = a.treeid;
  return 0;
}

int read_counter(const char *pool, uint64_t qg, const char *name, uint64_t *out, int *none) {
  int fd = open_dir(pool);
  if (fd < 0) return -1;
  struct btrfs_ioctl_fs_info_args fi;
  memset(&fi, 0, sizeof(fi));
  int r = ioctl(fd, BTRFS_IOC_FS_INFO, &fi);
  close(fd);
  if (r < 0) return -1;
  char uuid[37], path[180];
  const unsigned char *u = fi.fsid;
  snprintf(uuid, sizeof(uuid), "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
  snprintf(path, sizeof(path), "/sys/fs/btrfs/%s/qgroups/%" PRIu64 "_%" PRIu64 "/%s", uuid, qg >> LEVEL_SHIFT, qg & LEVEL_MASK, name);
  FILE *f = fopen(path, "re");
  if (!f) return -1;
  char buf[64] = {0};
  int ok = fgets(buf, sizeof(buf), f) != NULL;
  fclose(f);
  if (!ok) return -1;
  if (none) *none = strncmp(buf, "none", 4) == 0;
  *out = strtoull(buf, NULL, 10);
  return 0;
}

int set_limit(const char *pool, uint64_t qg, uint64_t bytes) {
  int fd = open_dir(pool);
  if (fd < 0) return fail(pool);
  struct btrfs_ioctl_qgroup_limit_args a;
  memset(&a, 0, sizeof(a));
  a.qgroupid = qg;
  a.lim.flags = BTRFS_QGROUP_LIMIT_MAX_RFER;
  a.lim.max_rfer = bytes;
  int r = ioctl(fd, BTRFS_IOC_QGROUP_LIMIT, &a);
  close(fd);
  return r < 0 ? fail("BTRFS_IOC_QGROUP_LIMIT") : 0;
}

int parse_bytes(const char *s, uint64_t *out) {
  if (strcmp(s, "none") == 0) {
    *out = CLEAR_VALUE;
    return 0;
  }
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end || !*s || v == 0 || v == CLEAR_VALUE) return -1;
  *out = v;
  return 0;
}

int parse_qgroup(const char *s, uint64_t *out) {
  char *end;
  errno = 0;
  unsigned long long a = strtoull(s, &end, 10);
  if (errno || end == s) return -1;
  if (*end == 0) {
    if (a == 0 || a > LEVEL_MASK) return -1;
    *out = a;
    return 0;
  }
  if (*end != '/' || a > 7) return -1;
  const char *t = end + 1;
  unsigned long long b = strtoull(t, &end, 10);
  if (errno || end == t || *end || b == 0 || b > LEVEL_MASK) return -1;
  *out = (uint64_t)a << LEVEL_SHIFT | b;
  return 0;
}

static int quota_ctl(const char *pool, uint64_t cmd) {
  int fd = open_dir(pool);
  if (fd < 0) return -1;
  struct btrfs_ioctl_quota_ctl_args a;
  memset(&a, 0, sizeof(a));
  a.cmd = cmd;
  int r = ioctl(fd, BTRFS_IOC_QUOTA_CTL, &a);
  int e = errno;
  close(fd);
  errno = e;
  return r;
}

static int print_usage(const char *pool, uint64_t qg) {
  uint64_t rfer, excl, max;
  int none = 1;
  if (read_counter(pool, qg, "referenced", &rfer, NULL) != 0) return 3;
  if (read_counter(pool, qg, "exclusive", &excl, NULL) != 0) return 3;
  if (read_counter(pool, qg, "max_referenced", &max, &none) != 0) none = 1;
  printf("%" PRIu64 "/%" PRIu64 " %" PRIu64 " %" PRIu64 " ", qg >> LEVEL_SHIFT, qg & LEVEL_MASK, rfer, excl);
  if (none || max == 0 || max == CLEAR_VALUE) printf("none\n");
  else printf("%" PRIu64 "\n", max);
  return 0;
}

static int usage(void) {
  fprintf(stderr, "usage: forkd-qgroup enable-simple|disable|show|limit|start|limit-id|group|start-lineage|sweep POOL ...\n");
  return 2;
}

static int pool_command(const char *cmd, const char *pool) {
  if (strcmp(cmd, "enable-simple") == 0) {
    if (quota_ctl(pool, BTRFS_QUOTA_CTL_ENABLE_SIMPLE_QUOTA) == 0) return 0;
    /* A kernel without simple quotas does not know the command. */
    if (errno == EINVAL || errno == EOPNOTSUPP) return 4;
    return fail("BTRFS_QUOTA_CTL_ENABLE_SIMPLE_QUOTA");
  }
  if (strcmp(cmd, "disable") == 0) return quota_ctl(pool, BTRFS_QUOTA_CTL_DISABLE) == 0 ? 0 : fail("BTRFS_QUOTA_CTL_DISABLE");
  if (strcmp(cmd, "sweep") == 0) return sweep_lineages(pool);
  return usage();
}

int main(int argc, char **argv) {
  if (argc == 3) return pool_command(argv[1], argv[2]);
  if (argc < 4) return usage();
  const char *cmd = argv[1], *pool = argv[2];
  uint64_t id, bytes, qg;
  if (strcmp(cmd, "limit-id") == 0) {
    if (argc != 5 || parse_qgroup(argv[3], &qg) != 0 || parse_bytes(argv[4], &bytes) != 0) return usage();
    return set_limit(pool, qg, bytes);
  }
  if (subvol_id(argv[3], &id) != 0) return 3;
  uint64_t rfer;
  if (read_counter(pool, id, "referenced", &rfer, NULL) != 0) return 3;
  if (strcmp(cmd, "show") == 0 && argc == 4) return print_usage(pool, lineage_of(pool, id, &qg) == 1 ? qg : id);
  if (strcmp(cmd, "group") == 0 && argc == 4) {
    if (lineage_of(pool, id, &qg) != 1) return 3;
    printf("1/%" PRIu64 "\n", qg & LEVEL_MASK);
    return 0;
  }
  if (strcmp(cmd, "limit") == 0 && argc == 5) {
    if (parse_bytes(argv[4], &bytes) != 0) return usage();
    return set_limit(pool, id, bytes);
  }
  if ((strcmp(cmd, "start") == 0 && argc == 6) || (strcmp(cmd, "start-lineage") == 0 && argc == 7)) {
    int lineage = argc == 7;
    uint64_t exact, headroom;
    char *e1, *e2;
    exact = strtoull(argv[4 + lineage], &e1, 10);
    headroom = strtoull(argv[5 + lineage], &e2, 10);
    if (*e1 || *e2 || exact == 0) return usage();
    if (lineage) return start_lineage(pool, argv[3], argv[4], exact, headroom);
    if (set_limit(pool, id, (exact > rfer ? exact : rfer) + headroom) != 0) return 1;
    printf("%" PRIu64 " %" PRIu64 "\n", id, rfer);
    return 0;
  }
  return usage();
}
