#include "pty.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#ifndef TIOCGPTPEER
#define TIOCGPTPEER _IO('T', 0x41)
#endif

int pty_open(int *master, char *name, size_t n, int cols, int rows) {
  int m = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
  if (m < 0) return -errno;
  int unlock = 0, num = -1;
  if (ioctl(m, TIOCSPTLCK, &unlock) < 0 || ioctl(m, TIOCGPTN, &num) < 0) {
    int e = errno;
    close(m);
    return -e;
  }
  snprintf(name, n, "/dev/pts/%d", num);
  struct termios t;
  if (tcgetattr(m, &t) == 0) { /* on a master this is the slave's termios */
    t.c_iflag |= IUTF8;
    tcsetattr(m, TCSANOW, &t);
  }
  pty_resize(m, cols, rows);
  *master = m;
  return 0;
}

int pty_child_attach(int master, const char *name) {
  int s = ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY);
  if (s < 0) s = open(name, O_RDWR | O_NOCTTY);
  if (s < 0) return -errno;
  if (ioctl(s, TIOCSCTTY, 0) < 0) return -errno;
  for (int fd = 0; fd < 3; fd++)
    if (dup2(s, fd) < 0) return -errno;
  if (s > 2) close(s);
  return 0;
}

int pty_resize(int master, int cols, int rows) {
  struct winsize ws = {.ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols};
  return ioctl(master, TIOCSWINSZ, &ws) < 0 ? -errno : 0;
}

int pty_eof_char(int master) {
  struct termios t;
  if (tcgetattr(master, &t) == 0 && t.c_cc[VEOF] != _POSIX_VDISABLE) return t.c_cc[VEOF];
  return 4;
}
