/*
 * forkd-subvol: removes the Btrfs subvolumes nested in a volume, deepest
 * first, so the volume itself can then be deleted (a subvolume that holds
 * another cannot be: ENOTEMPTY).
 *
 *   forkd-subvol delete-nested POOL VOLUME   -> prints how many it deleted
 *   forkd-subvol snapshot [-r] SOURCE DEST   -> a (read-only) snapshot of SOURCE at DEST
 *   forkd-subvol unchanged SNAPSHOT VOLUME   -> exit 0: VOLUME is as it was when SNAPSHOT was taken of it
 *
 * A sandbox root made one with BTRFS_IOC_SUBVOL_CREATE before seccomp
 * refused it (pools made before that). The root is the sandbox's to shape,
 * so no path inside it is ever used: the children come from the root tree by
 * id (BTRFS_IOC_TREE_SEARCH over ROOT_REF items), and each is deleted by id
 * through POOL's fd (BTRFS_IOC_SNAP_DESTROY_V2 with BTRFS_SUBVOL_SPEC_BY_ID),
 * the kernel finding its name and parent itself. Only VOLUME's own path is
 * opened: the host made it, and a sandbox cannot replace its own root.
 * Exit 3: VOLUME is not a subvolume.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <linux/btrfs.h>
#include <linux/btrfs_tree.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>
#include "../btrfs-search.h"

/* The most it deletes under one volume: far beyond any real use, a bound on a hostile one. */
#define MAX_NESTED 100000

struct ids {
  uint64_t *v;
  size_t n, cap;
};

static int fail(const char *what) {
  fprintf(stderr, "forkd-subvol: %s: %s\n", what, strerror(errno));
  return 1;
}

static int push(struct ids *ids, uint64_t id) {
  if (ids->n >= MAX_NESTED) {
    errno = E2BIG;
    return -1;
  }
  if (ids->n == ids->cap) {
    size_t cap = ids->cap ? ids->cap * 2 : 64;
    uint64_t *v = realloc(ids->v, cap * sizeof(*v));
    if (!v) return -1;
    ids->v = v;
    ids->cap = cap;
  }
  ids->v[ids->n++] = id;
  return 0;
}

static int push_child(const struct btrfs_ioctl_search_header *h, const void *item, void *ctx) {
  (void)item;
  return push(ctx, h->offset) < 0 ? -1 : 0;
}

/* Appends the ids of the subvolumes directly in `parent` (its ROOT_REF items: key (parent, ROOT_REF, child)). */
static int children(int fd, uint64_t parent, struct ids *out) {
  return btrfs_search_each(fd, BTRFS_ROOT_TREE_OBJECTID, parent, BTRFS_ROOT_REF_KEY, 0, UINT64_MAX, push_child, out) < 0 ? -1 : 0;
}

static int delete_by_id(int pool, uint64_t id) {
  struct btrfs_ioctl_vol_args_v2 a;
  memset(&a, 0, sizeof(a));
  a.flags = BTRFS_SUBVOL_SPEC_BY_ID;
  a.subvolid = id;
  return ioctl(pool, BTRFS_IOC_SNAP_DESTROY_V2, &a);
}

static int delete_nested(const char *pool_path, const char *volume) {
  int vol = open(volume, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (vol < 0) return fail(volume);
  struct stat st;
  struct btrfs_ioctl_ino_lookup_args l;
  memset(&l, 0, sizeof(l));
  l.objectid = BTRFS_FIRST_FREE_OBJECTID;
  if (fstat(vol, &st) < 0 || st.st_ino != BTRFS_FIRST_FREE_OBJECTID || ioctl(vol, BTRFS_IOC_INO_LOOKUP, &l) < 0) {
    close(vol);
    return 3;
  }
  close(vol);
  int pool = open(pool_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (pool < 0) return fail(pool_path);
  /* Breadth first: every subvolume comes after its parent, so the list read backwards is deepest first. */
  struct ids all = {0};
  if (push(&all, l.treeid) < 0) return fail("out of memory");
  for (size_t i = 0; i < all.n; i++)
    if (children(pool, all.v[i], &all) < 0) return fail("BTRFS_IOC_TREE_SEARCH");
  size_t deleted = 0;
  for (size_t i = all.n; i-- > 1;) {
    if (delete_by_id(pool, all.v[i]) < 0) {
      fprintf(stderr, "forkd-subvol: deleting subvolume %" PRIu64 ": %s\n", all.v[i], strerror(errno));
      return 1;
    }
    deleted++;
  }
  printf("%zu\n", deleted);
  free(all.v);
  close(pool);
  return 0;
}

/*
 * `btrfs subvolume snapshot` without btrfs-progs: the same ioctl
 * (BTRFS_IOC_SNAP_CREATE_V2; the kernel makes the snapshot in a transaction
 * commit either way) from a static binary that starts in well under a
 * millisecond, where the dynamically linked btrfs-progs takes a few. DEST
 * must not exist; its parent is opened by path (pool paths, the host's).
 */
static int snapshot(const char *source, const char *dest, bool readonly) {
  const char *slash = strrchr(dest, '/');
  const char *name = slash ? slash + 1 : dest;
  size_t dirlen = slash ? (size_t)(slash - dest) : 0;
  struct btrfs_ioctl_vol_args_v2 a;
  memset(&a, 0, sizeof(a));
  if (!*name || !strcmp(name, ".") || !strcmp(name, "..") || strlen(name) >= sizeof(a.name) || dirlen >= 4096) {
    errno = EINVAL;
    return fail(dest);
  }
  char dir[4096];
  if (slash) {
    memcpy(dir, dest, dirlen);
    dir[dirlen] = 0;
    if (!dirlen) strcpy(dir, "/");
  } else {
    strcpy(dir, ".");
  }
  int src = open(source, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (src < 0) return fail(source);
  int parent = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (parent < 0) return fail(dir);
  a.fd = src;
  a.flags = readonly ? BTRFS_SUBVOL_RDONLY : 0;
  memcpy(a.name, name, strlen(name));
  if (ioctl(parent, BTRFS_IOC_SNAP_CREATE_V2, &a) < 0) return fail(dest);
  close(parent);
  close(src);
  return 0;
}

/* An fd of a subvolume's own root directory, with what Btrfs records of it; -1 when `path` is not one. */
static int open_subvol(const char *path, struct btrfs_ioctl_get_subvol_info_args *out) {
  int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat st;
  memset(out, 0, sizeof(*out));
  if (fstat(fd, &st) < 0 || st.st_ino != BTRFS_FIRST_FREE_OBJECTID || ioctl(fd, BTRFS_IOC_GET_SUBVOL_INFO, out) < 0) {
    close(fd);
    return -1;
  }
  return fd;
}

static int any_child(const struct btrfs_ioctl_search_header *h, const void *item, void *ctx) {
  (void)h, (void)item, (void)ctx;
  return 1;
}

/*
 * Whether VOLUME is still what the read-only SNAPSHOT was taken of, so a
 * restore may keep it instead of a fresh copy of SNAPSHOT: SNAPSHOT's parent
 * is VOLUME, and VOLUME's tree was last written in the transaction that made
 * SNAPSHOT (taking a snapshot writes its source's root in that transaction;
 * any later change committed to the tree moves its generation on). Data
 * still in the page cache is not in the tree yet: the caller must know that
 * nothing wrote VOLUME since (its processes were frozen from the snapshot
 * until killed). A subvolume nested in VOLUME changes without moving VOLUME's
 * generation and is not in SNAPSHOT: VOLUME must hold none.
 * Exit 0: unchanged; 1: changed; 3: either is not a subvolume.
 */
static int unchanged(const char *snapshot, const char *volume) {
  struct btrfs_ioctl_get_subvol_info_args s, v;
  int sfd = open_subvol(snapshot, &s);
  if (sfd < 0) return 3;
  close(sfd);
  int fd = open_subvol(volume, &v);
  if (fd < 0) return 3;
  int r = 1;
  if ((s.flags & BTRFS_ROOT_SUBVOL_RDONLY) && !memcmp(s.parent_uuid, v.uuid, BTRFS_UUID_SIZE) && v.generation == s.otransid)
    r = btrfs_search_each(fd, BTRFS_ROOT_TREE_OBJECTID, v.treeid, BTRFS_ROOT_REF_KEY, 0, UINT64_MAX, any_child, NULL) == 0 ? 0 : 1;
  close(fd);
  return r;
}

int main(int argc, char **argv) {
  if (argc == 4 && strcmp(argv[1], "delete-nested") == 0) return delete_nested(argv[2], argv[3]);
  if (argc == 4 && strcmp(argv[1], "snapshot") == 0) return snapshot(argv[2], argv[3], false);
  if (argc == 5 && strcmp(argv[1], "snapshot") == 0 && strcmp(argv[2], "-r") == 0) return snapshot(argv[3], argv[4], true);
  if (argc == 4 && strcmp(argv[1], "unchanged") == 0) return unchanged(argv[2], argv[3]);
  fprintf(stderr, "usage: forkd-subvol delete-nested POOL VOLUME | snapshot [-r] SOURCE DEST | unchanged SNAPSHOT VOLUME\n");
  return 2;
}
