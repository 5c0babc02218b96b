/*
 * forkd-qgroup: the Btrfs qgroup calls of a sandbox's start, by ioctl and
 * sysfs, in one static process (the btrfs tool took three runs, ~40 ms on a
 * busy host, on every create, fork, resume and rewind).
 *
 *   forkd-qgroup show POOL VOLUME            -> "ID REFERENCED EXCLUSIVE LIMIT|none"
 *   forkd-qgroup limit POOL VOLUME BYTES|none
 *   forkd-qgroup start POOL VOLUME EXACT HEADROOM
 *       limit = max(EXACT, referenced) + HEADROOM; prints "ID REFERENCED"
 *   forkd-qgroup limit-id POOL ID BYTES|none
 *
 * VOLUME's subvolume id comes from BTRFS_IOC_INO_LOOKUP; its numbers from
 * /sys/fs/btrfs/FSID/qgroups/0_ID (the kernel's live counters). Limits are
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

#define CLEAR_VALUE ((uint64_t)-1)
/* The objectid of a subvolume's root directory (linux/btrfs_tree.h). */
#define FIRST_FREE_OBJECTID 256ULL

static int fail(const char *what) {
  fprintf(stderr, "forkd-qgroup: %s: %s\n", what, strerror(errno));
  return 1;
}

static int open_dir(const char *path) {
  return open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

static int subvol_id(const char *path, uint64_t *id) {
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

/* Reads /sys/fs/btrfs/FSID/qgroups/0_ID/NAME; 0 on success. */
static int read_counter(const char *pool, uint64_t id, const char *name, uint64_t *out, int *none) {
  int fd = open_dir(pool);
  if (fd < 0) return -1;
  struct btrfs_ioctl_fs_info_args fi;
  memset(&fi, 0, sizeof(fi));
  int r = ioctl(fd, BTRFS_IOC_FS_INFO, &fi);
  close(fd);
  if (r < 0) return -1;
  char uuid[37], path[160];
  const unsigned char *u = fi.fsid;
  snprintf(uuid, sizeof(uuid), "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
  snprintf(path, sizeof(path), "/sys/fs/btrfs/%s/qgroups/0_%" PRIu64 "/%s", uuid, id, name);
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

static int set_limit(const char *pool, uint64_t id, uint64_t bytes) {
  int fd = open_dir(pool);
  if (fd < 0) return fail(pool);
  struct btrfs_ioctl_qgroup_limit_args a;
  memset(&a, 0, sizeof(a));
  a.qgroupid = id;
  a.lim.flags = BTRFS_QGROUP_LIMIT_MAX_RFER;
  a.lim.max_rfer = bytes;
  int r = ioctl(fd, BTRFS_IOC_QGROUP_LIMIT, &a);
  close(fd);
  return r < 0 ? fail("BTRFS_IOC_QGROUP_LIMIT") : 0;
}

static int parse_bytes(const char *s, uint64_t *out) {
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

static int usage(void) {
  fprintf(stderr, "usage: forkd-qgroup show|limit|start|limit-id POOL ...\n");
  return 2;
}

int main(int argc, char **argv) {
  if (argc < 4) return usage();
  const char *cmd = argv[1], *pool = argv[2];
  uint64_t id, bytes;
  if (strcmp(cmd, "limit-id") == 0) {
    char *end;
    id = strtoull(argv[3], &end, 10);
    if (argc != 5 || *end || id == 0 || parse_bytes(argv[4], &bytes) != 0) return usage();
    return set_limit(pool, id, bytes);
  }
  if (subvol_id(argv[3], &id) != 0) return 3;
  uint64_t rfer, excl, max;
  int none = 1;
  if (read_counter(pool, id, "referenced", &rfer, NULL) != 0) return 3;
  if (strcmp(cmd, "show") == 0 && argc == 4) {
    if (read_counter(pool, id, "exclusive", &excl, NULL) != 0) return 3;
    if (read_counter(pool, id, "max_referenced", &max, &none) != 0) none = 1;
    if (none || max == 0 || max == CLEAR_VALUE) printf("%" PRIu64 " %" PRIu64 " %" PRIu64 " none\n", id, rfer, excl);
    else printf("%" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", id, rfer, excl, max);
    return 0;
  }
  if (strcmp(cmd, "limit") == 0 && argc == 5) {
    if (parse_bytes(argv[4], &bytes) != 0) return usage();
    return set_limit(pool, id, bytes);
  }
  if (strcmp(cmd, "start") == 0 && argc == 6) {
    uint64_t exact, headroom;
    char *e1, *e2;
    exact = strtoull(argv[4], &e1, 10);
    headroom = strtoull(argv[5], &e2, 10);
    if (*e1 || *e2 || exact == 0) return usage();
    if (set_limit(pool, id, (exact > rfer ? exact : rfer) + headroom) != 0) return 1;
    printf("%" PRIu64 " %" PRIu64 "\n", id, rfer);
    return 0;
  }
  return usage();
}
