/* forkd-guest: PID 1 of every sandbox. Startup and the poll(2) event loop. */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "client.h"
#include "conn.h"
#include "output.h"
#include "proctab.h"
#include "stdin.h"
#include "stream.h"
#include "util.h"
#include "watch.h"

#define DEFAULT_SOCKET "/.forkd/agent.sock"
#define ACCEPT_PAUSE_MS 100

enum { PK_SIG, PK_LISTEN, PK_CLIENT, PK_AUX, PK_STDIN, PK_PROC };

struct pref {
  int kind;
  void *obj;
};

static int g_lfd = -1, g_sfd = -1;
static int64_t g_accept_resume;
static struct pollfd *g_pfd;
static struct pref *g_pref;
static size_t g_pn, g_pcap;

static void poll_add(int fd, short events, int kind, void *obj) {
  if (g_pn == g_pcap) {
    size_t nc = g_pcap ? g_pcap * 2 : 64;
    struct pollfd *a = realloc(g_pfd, nc * sizeof *a);
    if (a) g_pfd = a;
    struct pref *b = realloc(g_pref, nc * sizeof *b);
    if (b) g_pref = b;
    if (!a || !b) return; /* out of memory: this fd waits a round */
    g_pcap = nc;
  }
  g_pfd[g_pn] = (struct pollfd){.fd = fd, .events = events};
  g_pref[g_pn] = (struct pref){kind, obj};
  g_pn++;
}

static void close_inherited_fds(void) {
  if (syscall(SYS_close_range, 3u, ~0u, 0u) == 0) return;
  long max = sysconf(_SC_OPEN_MAX);
  if (max < 0 || max > 65536) max = 65536;
  for (int fd = 3; fd < max; fd++) close(fd);
}

/* fds 0-2 must point inside the sandbox (CRIU) and stay occupied. */
static void reopen_stdio(void) {
  int fd = open("/dev/null", O_RDWR);
  if (fd < 0) fd = open("/", O_RDONLY | O_DIRECTORY);
  if (fd < 0) return;
  for (int i = 0; i < 3; i++)
    if (fd != i) dup2(fd, i);
  if (fd > 2) close(fd);
}

static int listen_at(const char *path) {
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  if (strlen(path) >= sizeof sa.sun_path) {
    errno = ENAMETOOLONG;
    return -1;
  }
  strcpy(sa.sun_path, path);
  char *dir = strdup(path);
  char *slash = dir ? strrchr(dir, '/') : NULL;
  if (slash && slash != dir) {
    *slash = 0;
    if (mkdir(dir, 0700) == 0 || strcmp(path, DEFAULT_SOCKET) == 0) chmod(dir, 0700);
  }
  free(dir);
  unlink(path);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 128) < 0) {
    int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  chmod(path, 0600);
  return fd;
}

static void do_accept(void) {
  for (int i = 0; i < 64; i++) {
    int fd = accept4(g_lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
        g_accept_resume = now_ms() + ACCEPT_PAUSE_MS;
      return;
    }
    if (g_nclients >= MAX_CLIENTS || !client_new(fd)) close(fd);
    else procs_host_back(now_ms());
  }
}

static void do_signals(void) {
  struct signalfd_siginfo si[8];
  while (read(g_sfd, si, sizeof si) > 0) {}
  proc_reap();
}

static void service(int64_t now) {
  proc_service(now);
  for (struct client *c = g_clients; c; c = c->next)
    if (!c->dead && c->stdin_pending && proc_client_stdin_fd(c) < 0)
      client_stdin_ready(c); /* the process's stdin went away: drop input */
  client_sweep();
  proc_sweep();
}

static void build_pollset(int64_t now) {
  g_pn = 0;
  poll_add(g_sfd, POLLIN, PK_SIG, NULL);
  if (now >= g_accept_resume) poll_add(g_lfd, POLLIN, PK_LISTEN, NULL);
  for (struct client *c = g_clients; c; c = c->next) {
    if (c->dead) continue;
    short ev = (client_want_read(c) ? POLLIN : 0) | (client_want_write(c) ? POLLOUT : 0);
    poll_add(c->fd, ev, PK_CLIENT, c);
    if (c->state == CS_READ && c->aux_wait && c->file_fd >= 0)
      poll_add(c->file_fd, POLLIN, PK_AUX, c);
    if (c->state == CS_WATCH && watch_fd(c) >= 0 && buf_size(&c->out) < OUT_SOFT)
      poll_add(watch_fd(c), POLLIN, PK_AUX, c);
    if (c->stdin_pending && proc_client_stdin_fd(c) >= 0)
      poll_add(proc_client_stdin_fd(c), POLLOUT, PK_STDIN, c);
  }
  for (struct proc *p = g_procs; p; p = p->next) {
    if (!proc_want_read(p)) continue;
    if (p->out_fd >= 0 && !p->pty_hup) poll_add(p->out_fd, POLLIN, PK_PROC, p);
    if (p->err_fd >= 0) poll_add(p->err_fd, POLLIN, PK_PROC, p);
  }
}

static void dispatch(size_t i) {
  short re = g_pfd[i].revents;
  int fd = g_pfd[i].fd;
  struct client *c = g_pref[i].obj;
  struct proc *p = g_pref[i].obj;
  switch (g_pref[i].kind) {
  case PK_SIG:
    do_signals();
    break;
  case PK_LISTEN:
    do_accept();
    break;
  case PK_CLIENT:
    if (c->dead || c->fd != fd) break;
    if (re & (POLLIN | POLLHUP | POLLERR | POLLNVAL)) {
      if (client_want_read(c) && !(re & POLLNVAL)) {
        client_read(c);
      } else if (re & (POLLHUP | POLLERR | POLLNVAL)) {
        client_close(c);
        break;
      }
    }
    if (!c->dead && (re & POLLOUT)) client_pump(c);
    break;
  case PK_AUX:
    if (c->dead) break;
    if (c->state == CS_READ && fd == c->file_fd) {
      c->aux_wait = false;
      client_pump(c);
    } else if (c->state == CS_WATCH && fd == watch_fd(c)) {
      watch_on_readable(c);
      client_pump(c);
    }
    break;
  case PK_STDIN:
    if (c->dead || !c->stdin_pending || proc_client_stdin_fd(c) != fd) break;
    client_stdin_ready(c);
    break;
  case PK_PROC:
    if (!p->removed && (fd == p->out_fd || fd == p->err_fd)) proc_on_readable(p, fd);
    break;
  }
}

int main(int argc, char **argv) {
  const char *sock = DEFAULT_SOCKET;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--socket") == 0 && i + 1 < argc) {
      sock = argv[++i];
    } else if (strcmp(argv[i], "--hold-ms") == 0 && i + 1 < argc) {
      g_hold_ms = atoll(argv[++i]); /* tests: the 30 s a held stream waits once its host is back */
    } else if (strcmp(argv[i], "--version") == 0) {
      printf("%s protocol %d\n", FORKD_AGENT_NAME, FORKD_GUEST_PROTOCOL);
      return 0;
    } else {
      fprintf(stderr, "usage: %s [--socket PATH] [--hold-ms MS]\n", argv[0]);
      return 2;
    }
  }
  /* small, returnable heap: large buffers are mmapped and given back */
  mallopt(M_MMAP_THRESHOLD, 64 * 1024);
  mallopt(M_TRIM_THRESHOLD, 64 * 1024);
  mallopt(M_TOP_PAD, 16 * 1024);

  /* Root in the sandbox must not ptrace the agent or read its memory,
     environment or fds (/proc/1/mem, environ, fd/): of a non-dumpable
     process that takes CAP_SYS_PTRACE, which only the host (CRIU) has.
     exec resets the flag, so what the agent spawns is dumpable again. */
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  close_inherited_fds();
  reopen_stdio();
  setsid();
  if (getpid() != 1) prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  umask(022);
  /* /dev is the runtime's fresh tmpfs (see oci-spec.ts): /dev/shm is a
     directory of it, made here inside the sandbox, rather than a second
     tmpfs that CRIU would tar at every dump and untar at every restore.
     Only as the sandbox's init: an agent run elsewhere leaves /dev alone. */
  if (getpid() == 1 && (mkdir("/dev/shm", 01777) == 0 || errno == EEXIST)) chmod("/dev/shm", 01777);
  /* dispositions are inherited across exec: none may stay ignored
     (a launcher may have ignored SIGINT/SIGQUIT); only SIGPIPE is,
     and spawned children restore it */
  for (int s = 1; s < NSIG; s++)
    if (s != SIGKILL && s != SIGSTOP) signal(s, SIG_DFL);
  signal(SIGPIPE, SIG_IGN);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  sigprocmask(SIG_BLOCK, &set, NULL);
  g_sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  g_lfd = listen_at(sock);
  if (g_sfd < 0 || g_lfd < 0) return 1; /* stdio is /dev/null: the exit status tells */
  client_set_release(conn_release);

  for (;;) {
    int64_t now = now_ms();
    service(now);
    build_pollset(now);
    int timeout = proc_poll_timeout(now);
    int expire = client_expire(now);
    if (expire >= 0 && (timeout < 0 || expire < timeout)) timeout = expire;
    if (now < g_accept_resume) {
      int t = (int)(g_accept_resume - now);
      if (timeout < 0 || t < timeout) timeout = t;
    }
    int n = poll(g_pfd, (nfds_t)g_pn, timeout);
    if (n <= 0) continue;
    size_t count = g_pn;
    for (size_t i = 0; i < count; i++)
      if (g_pfd[i].revents) dispatch(i);
  }
}
