/* Pseudo-terminal helpers. */
#ifndef FORKD_PTY_H
#define FORKD_PTY_H
#include <stddef.h>
#include <stdint.h>

/* Opens a master (CLOEXEC, non-blocking), unlocks it, sets the window size
   and IUTF8. name receives the slave path. 0 or -errno. */
int pty_open(int *master, char *name, size_t n, int cols, int rows);
/* In the child, after setsid(): opens the slave, makes it the controlling
   terminal and dup2s it onto 0/1/2. 0 or -errno. */
int pty_child_attach(int master, const char *name);
int pty_resize(int master, int cols, int rows);
int pty_eof_char(int master);

/* COLS/ROWS from a request: dflt when unset or below 1, at most 10000 */
static inline int clamp_dim(int64_t v, int dflt) {
  if (v < 1) return dflt;
  return v > 10000 ? 10000 : (int)v;
}

#endif
