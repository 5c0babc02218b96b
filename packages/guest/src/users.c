#include "users.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define DB_MAX (16u << 20)

/* Split line at ':' into at most nf fields; returns number of fields. */
static int split(char *line, char **f, int nf) {
  int n = 0;
  f[n++] = line;
  for (char *p = line; *p && n < nf; p++)
    if (*p == ':') {
      *p = 0;
      f[n++] = p + 1;
    }
  return n;
}

static int parse_id(const char *s, unsigned long *out) {
  if (!*s) return -1;
  char *end;
  errno = 0;
  unsigned long v = strtoul(s, &end, 10);
  if (errno || *end || v > 0xfffffffeul || s[0] == '-' || s[0] == '+' || s[0] == ' ') return -1;
  *out = v;
  return 0;
}

static void copy(char *dst, size_t n, const char *src) {
  size_t l = strlen(src);
  if (l >= n) l = n - 1;
  memcpy(dst, src, l);
  dst[l] = 0;
}

/* Look up by name (name != NULL) or by uid. 0 when found. */
static int passwd_find(const char *name, uid_t uid, struct user_info *u) {
  char *db = read_small_file("/etc/passwd", DB_MAX, NULL);
  if (!db) return -ENOENT;
  int found = -ENOENT;
  char *save = NULL;
  for (char *line = strtok_r(db, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    char *f[7];
    if (line[0] == '+' || line[0] == '-' || line[0] == '#') continue;
    if (split(line, f, 7) < 7) continue;
    unsigned long pu, pg;
    if (parse_id(f[2], &pu) || parse_id(f[3], &pg)) continue;
    if (name ? strcmp(f[0], name) != 0 : pu != uid) continue;
    u->uid = (uid_t)pu;
    u->gid = (gid_t)pg;
    copy(u->name, sizeof u->name, f[0]);
    copy(u->home, sizeof u->home, f[5][0] ? f[5] : "/");
    found = 0;
    break;
  }
  free(db);
  return found;
}

int user_by_name(const char *name, struct user_info *u) {
  memset(u, 0, sizeof *u);
  if (passwd_find(name, 0, u) == 0) return 0;
  unsigned long id;
  if (parse_id(name, &id) == 0) {
    user_by_uid((uid_t)id, u);
    return 0;
  }
  return -ENOENT;
}

void user_by_uid(uid_t uid, struct user_info *u) {
  memset(u, 0, sizeof *u);
  if (passwd_find(NULL, uid, u) == 0) return;
  u->uid = uid;
  u->gid = uid == 0 ? 0 : (gid_t)uid;
  if (uid == 0) copy(u->name, sizeof u->name, "root");
  else snprintf(u->name, sizeof u->name, "%u", (unsigned)uid);
  copy(u->home, sizeof u->home, uid == 0 ? "/root" : "/");
}

void user_load_groups(struct user_info *u) {
  u->ngroups = 0;
  u->groups[u->ngroups++] = u->gid;
  char *db = read_small_file("/etc/group", DB_MAX, NULL);
  if (!db) return;
  char *save = NULL;
  for (char *line = strtok_r(db, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    char *f[4];
    if (line[0] == '+' || line[0] == '-' || line[0] == '#') continue;
    if (split(line, f, 4) < 4) continue;
    unsigned long g;
    if (parse_id(f[2], &g)) continue;
    char *msave = NULL;
    for (char *m = strtok_r(f[3], ",", &msave); m; m = strtok_r(NULL, ",", &msave)) {
      if (strcmp(m, u->name) != 0) continue;
      int dup = 0;
      for (int i = 0; i < u->ngroups; i++) dup |= u->groups[i] == (gid_t)g;
      if (!dup && u->ngroups < USER_MAX_GROUPS) u->groups[u->ngroups++] = (gid_t)g;
      break;
    }
  }
  free(db);
}
