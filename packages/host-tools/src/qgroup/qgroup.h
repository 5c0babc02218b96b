/* forkd-qgroup: helpers shared by its commands (see main.c). */
#ifndef FORKD_QGROUP_H
#define FORKD_QGROUP_H
#include <stdint.h>

/* A qgroup id is LEVEL << 48 | ID; level 0 is a subvolume's own. */
#define LEVEL_SHIFT 48
#define LEVEL_MASK ((uint64_t)((1ULL << LEVEL_SHIFT) - 1))
#define CLEAR_VALUE ((uint64_t)-1)

int fail(const char *what);
int open_dir(const char *path);
/* VOLUME's subvolume id (BTRFS_IOC_INO_LOOKUP); -1 if it is not a subvolume of a Btrfs. */
int subvol_id(const char *path, uint64_t *id);
/* /sys/fs/btrfs/FSID/qgroups/LEVEL_ID/NAME of qgroup QG; 0 on success. */
int read_counter(const char *pool, uint64_t qg, const char *name, uint64_t *out, int *none);
/* max_rfer of qgroup QG (CLEAR_VALUE: none), through POOL's fd. */
int set_limit(const char *pool, uint64_t qg, uint64_t bytes);
int parse_bytes(const char *s, uint64_t *out);
/* "L/N" or "N" (level 0). */
int parse_qgroup(const char *s, uint64_t *out);

/* Simple quotas (lineage.c). */
int lineage_of(const char *pool, uint64_t id, uint64_t *group);
int start_lineage(const char *pool, const char *volume, const char *prev, uint64_t exact, uint64_t headroom);
int sweep_lineages(const char *pool);
#endif
