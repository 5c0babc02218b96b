/*
 * Lineage groups (simple quotas). With simple quotas an extent is charged,
 * for its life, to the subvolume that wrote it: a new root made from a
 * snapshot starts at zero. Resume and rewind make a sandbox a new root, so
 * the limit is on a level-1 qgroup, 1/N, that every root of the sandbox
 * joins: it counts what any of them wrote that is still stored (in the
 * files, in the sandbox's snapshots, in forks sharing them). N is the id of
 * the sandbox's first root, which Btrfs never reuses.
 *
 *   start-lineage POOL VOLUME GROUP|- EXACT HEADROOM: VOLUME joins its
 *     group (the one it is in; else GROUP, the previous root's; else a new
 *     1/<its id>), whose limit becomes max(EXACT, used) + HEADROOM (HEADROOM
 *     0: EXACT). Prints "1/N USED".
 *   sweep POOL: removes the lineage groups that count nothing (their
 *     sandboxes deleted and the cleaner done), so qgroups do not pile up.
 */
#include <errno.h>
#include <inttypes.h>
#include <linux/btrfs.h>
#include <linux/btrfs_tree.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include "qgroup.h"
#include "../btrfs-search.h"

#define LEVEL1 ((uint64_t)1 << LEVEL_SHIFT)

/* Items of the quota tree keyed (objectid, type, min_offset..max_offset). */
static int search_quota_tree(int fd, uint64_t objectid, uint32_t type, uint64_t min_offset, uint64_t max_offset, btrfs_item_fn fn, void *ctx) {
  return btrfs_search_each(fd, BTRFS_QUOTA_TREE_OBJECTID, objectid, type, min_offset, max_offset, fn, ctx);
}

static int first_offset(const struct btrfs_ioctl_search_header *h, const void *item, void *ctx) {
  (void)item;
  *(uint64_t *)ctx = h->offset;
  return 1;
}

/* 1 and *group: the level-1 qgroup 0/ID is a member of; 0: none; -1: error. */
int lineage_of(const char *pool, uint64_t id, uint64_t *group) {
  int fd = open_dir(pool);
  if (fd < 0) return -1;
  /* A relation is stored both ways; (child, RELATION, parent) finds the parents. */
  int r = search_quota_tree(fd, id, BTRFS_QGROUP_RELATION_KEY, LEVEL1, 2 * LEVEL1 - 1, first_offset, group);
  close(fd);
  return r;
}

static int qgroup_create(int fd, uint64_t qg, int create) {
  struct btrfs_ioctl_qgroup_create_args a;
  memset(&a, 0, sizeof(a));
  a.create = create;
  a.qgroupid = qg;
  return ioctl(fd, BTRFS_IOC_QGROUP_CREATE, &a);
}

static int qgroup_assign(int fd, uint64_t member, uint64_t group, int assign) {
  struct btrfs_ioctl_qgroup_assign_args a;
  memset(&a, 0, sizeof(a));
  a.assign = assign;
  a.src = member;
  a.dst = group;
  return ioctl(fd, BTRFS_IOC_QGROUP_ASSIGN, &a);
}

int start_lineage(const char *pool, const char *volume, const char *prev, uint64_t exact, uint64_t headroom) {
  uint64_t id, group = 0;
  if (subvol_id(volume, &id) != 0) return 3;
  int found = lineage_of(pool, id, &group);
  if (found < 0) return fail("BTRFS_IOC_TREE_SEARCH");
  if (!found) {
    if (strcmp(prev, "-") == 0) group = LEVEL1 | id;
    else if (parse_qgroup(prev, &group) != 0 || group >> LEVEL_SHIFT != 1) return 2;
    int fd = open_dir(pool);
    if (fd < 0) return fail(pool);
    int r = qgroup_create(fd, group, 1);
    if (r < 0 && errno != EEXIST) {
      close(fd);
      return fail("BTRFS_IOC_QGROUP_CREATE");
    }
    /* A new root counts nothing yet: joining needs no rescan. */
    r = qgroup_assign(fd, id, group, 1);
    int e = errno;
    close(fd);
    errno = e;
    if (r < 0 && errno != EEXIST) return fail("BTRFS_IOC_QGROUP_ASSIGN");
  }
  uint64_t used;
  if (read_counter(pool, group, "referenced", &used, NULL) != 0) return fail("qgroup sysfs");
  uint64_t limit = headroom ? (exact > used ? exact : used) + headroom : exact;
  if (set_limit(pool, group, limit) != 0) return 1;
  printf("1/%" PRIu64 " %" PRIu64 "\n", group & LEVEL_MASK, used);
  return 0;
}

struct groups {
  uint64_t *v;
  size_t n, cap;
};

static int collect(const struct btrfs_ioctl_search_header *h, const void *item, void *ctx) {
  (void)item;
  struct groups *g = ctx;
  if (g->n == g->cap) {
    size_t cap = g->cap ? 2 * g->cap : 64;
    uint64_t *v = realloc(g->v, cap * sizeof(*v));
    if (!v) return -1;
    g->v = v;
    g->cap = cap;
  }
  g->v[g->n++] = h->offset;
  return 0;
}

/* Removes a level-1 group that counts nothing: its members first (the kernel refuses to remove a group that has any). */
static int remove_group(int fd, uint64_t group) {
  struct groups members = {0};
  if (search_quota_tree(fd, group, BTRFS_QGROUP_RELATION_KEY, 0, LEVEL1 - 1, collect, &members) < 0) return -1;
  for (size_t i = 0; i < members.n; i++) qgroup_assign(fd, members.v[i], group, 0);
  free(members.v);
  return qgroup_create(fd, group, 0);
}

int sweep_lineages(const char *pool) {
  int fd = open_dir(pool);
  if (fd < 0) return fail(pool);
  struct groups all = {0};
  /* Every qgroup has an INFO item, key (0, QGROUP_INFO, qgroupid). */
  if (search_quota_tree(fd, 0, BTRFS_QGROUP_INFO_KEY, LEVEL1, 2 * LEVEL1 - 1, collect, &all) < 0) {
    close(fd);
    return fail("BTRFS_IOC_TREE_SEARCH");
  }
  unsigned removed = 0;
  for (size_t i = 0; i < all.n; i++) {
    uint64_t used;
    if (read_counter(pool, all.v[i], "referenced", &used, NULL) != 0 || used != 0) continue;
    if (remove_group(fd, all.v[i]) == 0) removed++;
  }
  free(all.v);
  close(fd);
  printf("%u\n", removed);
  return 0;
}
