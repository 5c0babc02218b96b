/*
 * One walk over a Btrfs tree's items with BTRFS_IOC_TREE_SEARCH, shared by
 * the tools that read trees (forkd-qgroup's quota tree, forkd-subvol's root
 * tree): every item keyed (objectid, type, offset) with offset in
 * [min_offset, max_offset], in batches of the kernel's buffer.
 */
#ifndef FORKD_BTRFS_SEARCH_H
#define FORKD_BTRFS_SEARCH_H

#include <linux/btrfs.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>

/* Called with each item and its h->len bytes of data; a non-zero return stops the walk and is returned by it. */
typedef int (*btrfs_item_fn)(const struct btrfs_ioctl_search_header *h, const void *item, void *ctx);

/* 0 at the end, fn's non-zero return, or -1 (errno) when the ioctl fails. */
static inline int btrfs_search_each(int fd, uint64_t tree, uint64_t objectid, uint32_t type, uint64_t min_offset, uint64_t max_offset, btrfs_item_fn fn, void *ctx) {
  struct btrfs_ioctl_search_args a;
  uint64_t from = min_offset;
  for (;;) {
    memset(&a, 0, sizeof(a));
    a.key.tree_id = tree;
    a.key.min_objectid = a.key.max_objectid = objectid;
    a.key.min_type = a.key.max_type = type;
    a.key.min_offset = from;
    a.key.max_offset = max_offset;
    a.key.max_transid = UINT64_MAX;
    a.key.nr_items = 4096;
    if (ioctl(fd, BTRFS_IOC_TREE_SEARCH, &a) < 0) return -1;
    if (a.key.nr_items == 0) return 0;
    size_t off = 0;
    uint64_t last = 0;
    for (uint32_t i = 0; i < a.key.nr_items; i++) {
      struct btrfs_ioctl_search_header h;
      if (off + sizeof(h) > sizeof(a.buf)) break;
      memcpy(&h, a.buf + off, sizeof(h));
      const char *item = a.buf + off + sizeof(h);
      off += sizeof(h) + h.len;
      if (off > sizeof(a.buf)) break;
      last = h.offset;
      if (h.objectid == objectid && h.type == type) {
        int r = fn(&h, item, ctx);
        if (r) return r;
      }
    }
    if (last >= max_offset) return 0;
    from = last + 1;
  }
}

#endif
