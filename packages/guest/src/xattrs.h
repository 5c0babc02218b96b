/* File metadata (protocol 3): a file's user.* extended attributes, set by
   WRITE_FILE and reported in ENTRY frames as XATTR `name=value` (the name
   without its `user.` prefix). */
#ifndef FORKD_XATTRS_H
#define FORKD_XATTRS_H
#include <stdbool.h>
#include <sys/stat.h>

#include "buf.h"
#include "frame.h"

/* Checks a request's XATTR list before anything is written: NULL if good,
   else why not (a static string). */
const char *xattrs_check(const struct req *r);
/* Applies the request's XATTR list to the open file: with XATTR_REPLACE
   (a name prefix, "" for all), first removes the file's user.<prefix>*
   attributes that the list does not set. A file system without xattrs
   (ENOTSUP) is not an error: nothing is stored, and ENTRY shows none.
   0 or an errno. */
int xattrs_apply(int fd, const struct req *r);
/* Appends XATTR keys for the user.* attributes of the entry `name` in
   `dfd` (AT_FDCWD: a path). Only regular files and directories carry them. */
void xattrs_report(struct buf *b, int dfd, const char *name, const struct stat *st);

#endif
