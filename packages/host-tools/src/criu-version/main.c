/*
 * forkd-criu-version: answers runc's CRIU version probe from a recorded reply.
 *
 * runc starts a whole `criu swrk` before every checkpoint and restore only to
 * ask its version (one CriuReq of type VERSION), then a second one to do the
 * work: a process start, CRIU's loader and libraries from its private root
 * and its initialisation, 15-60 ms of every snapshot, pause, resume, fork and
 * rewind. forkd's criu wrapper (see setup) runs this first for `swrk FD`:
 *
 *   forkd-criu-version answer FD REPLY   peek at the first request on FD; if it
 *                                        is the version probe, consume it, send
 *                                        REPLY's bytes and exit 0; otherwise
 *                                        exit 1 and leave the request unread
 *                                        for the real criu the wrapper execs.
 *   forkd-criu-version record CRIU REPLY ask CRIU (the wrapper, with no reply
 *                                        recorded yet) the real probe over a
 *                                        socketpair; write its reply to REPLY
 *                                        (through REPLY.<pid>.tmp, renamed).
 *
 * Setup records the reply whenever it installs CRIU, so it is always that
 * CRIU's own answer. Any doubt (no reply file, a short read, another request)
 * means exit 1: the real criu answers, as without this tool.
 *
 * Installed as the `criu` runc and forkd run (any argv[0] named criu), it is
 * also CRIU's wrapper, so no shell starts at each CRIU run (~3 ms each here,
 * two per operation): FILE.launch beside it (FILE its own path) holds, one
 * per line, the reply file, HOME for CRIU's config, the library that
 * FORKD_UFFD_SOCK or FORKD_LAZY_WAIT_MS preloads, then the command that runs CRIU from its private
 * root (loader, its options, criu). `swrk FD` is answered as above when it
 * is the version probe (unless FORKD_CRIU_ASK_VERSION is set). With
 * FORKD_CRIU_DUMP_CONFIG (forkd's config for dumps, which names the action
 * script), a dump request is carried by the relay (relay.c), CRIU then
 * running no script; any other request, or a dump the relay cannot carry,
 * gets that config as CRIU_CONFIG_FILE; with FORKD_CRIU_SAVE_REQUEST too, the
 * relay keeps the request there, which `dump-saved REQUEST IMAGES WORK` later
 * sends to CRIU without runc; FORKD_CRIU_DUMP_LOG_LEVEL (0-4) is the log
 * level the relay gives CRIU for such dumps instead of runc's 4. Everything
 * else execs CRIU with the same arguments. CRIU always runs with
 * GNUTLS_NO_IMPLICIT_INIT (see launch).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "relay.h"

/* CriuReq { type = VERSION (10) }: field 1, varint. */
static const unsigned char PROBE[] = {0x08, 0x0a};
/* A reply starts with CriuResp.type = VERSION. */
#define MAX_REPLY 4096

static int parse_fd(const char *s) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || *end || v < 0 || v > 1 << 20) return -1;
  return (int)v;
}

static int answer(int fd, const char *reply_path) {
  unsigned char req[64];
  ssize_t n = recv(fd, req, sizeof req, MSG_PEEK);
  if (n != (ssize_t)sizeof PROBE || memcmp(req, PROBE, sizeof PROBE) != 0) return 1;
  int rf = open(reply_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (rf < 0) return 1;
  unsigned char reply[MAX_REPLY];
  ssize_t len = read(rf, reply, sizeof reply);
  close(rf);
  if (len < 2 || len >= MAX_REPLY || reply[0] != PROBE[0] || reply[1] != PROBE[1]) return 1;
  if (recv(fd, req, sizeof req, 0) != n) return 2;
  return send(fd, reply, (size_t)len, MSG_NOSIGNAL) == len ? 0 : 2;
}

static int record(const char *criu, const char *out) {
  int sp[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sp) != 0) return perror("socketpair"), 2;
  pid_t pid = fork();
  if (pid < 0) return perror("fork"), 2;
  if (pid == 0) {
    close(sp[0]);
    char fdarg[16];
    snprintf(fdarg, sizeof fdarg, "%d", sp[1]);
    execl(criu, criu, "swrk", fdarg, (char *)NULL);
    _exit(127);
  }
  close(sp[1]);
  unsigned char reply[MAX_REPLY];
  ssize_t len = -1;
  if (send(sp[0], PROBE, sizeof PROBE, MSG_NOSIGNAL) == (ssize_t)sizeof PROBE) len = recv(sp[0], reply, sizeof reply, 0);
  close(sp[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (len < 2 || len >= MAX_REPLY || reply[0] != PROBE[0] || reply[1] != PROBE[1]) {
    fprintf(stderr, "forkd-criu-version: %s gave no version reply\n", criu);
    return 2;
  }
  char tmp[4096];
  /* Its own name per process: daemons starting together each record, and a shared .tmp could be renamed half-written. */
  if (snprintf(tmp, sizeof tmp, "%s.%ld.tmp", out, (long)getpid()) >= (int)sizeof tmp) return 2;
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return perror(tmp), 2;
  int ok = write(fd, reply, (size_t)len) == len && fsync(fd) == 0;
  ok = close(fd) == 0 && ok;
  if (!ok || rename(tmp, out) != 0) return perror(out), unlink(tmp), 2;
  return 0;
}

#define MAX_LAUNCH 16384
/* forkd's CRIU config for dumps (action-script): named to CRIU (CRIU_CONFIG_FILE) only when the relay does not carry the dump. */
#define DUMP_CONFIG_ENV "FORKD_CRIU_DUMP_CONFIG"
/* Where the relay keeps runc's dump request for `criu dump-saved` (forkd's runc-direct-dump.ts). */
#define SAVE_REQUEST_ENV "FORKD_CRIU_SAVE_REQUEST"
/* CRIU's log level for the dumps the relay carries (one digit, 0-4); unset: the request's. */
#define DUMP_LOG_LEVEL_ENV "FORKD_CRIU_DUMP_LOG_LEVEL"
#define MAX_LINES 32

/* The command that runs CRIU: the launch file's (line 4 on), the preload when asked, then our arguments. */
static int criu_args(char **line, int lines, int argc, char **argv, char **args) {
  const char *uffd = getenv("FORKD_UFFD_SOCK");
  const char *lazy = getenv("FORKD_LAZY_WAIT_MS");
  int k = 0;
  args[k++] = line[3];
  if ((uffd && *uffd) || (lazy && *lazy)) {
    args[k++] = "--preload";
    args[k++] = line[2];
  }
  for (int i = 4; i < lines; i++) args[k++] = line[i];
  for (int i = 1; i < argc; i++) args[k++] = argv[i];
  args[k] = NULL;
  return k;
}

static int launch(int argc, char **argv) {
  char path[4096];
  ssize_t n = readlink("/proc/self/exe", path, sizeof path - 16);
  if (n <= 0) return perror("forkd-criu: /proc/self/exe"), 127;
  memcpy(path + n, ".launch", 8);
  static char buf[MAX_LAUNCH];
  int f = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  ssize_t len = f < 0 ? -1 : read(f, buf, sizeof buf - 1);
  if (f >= 0) close(f);
  if (len <= 0) return fprintf(stderr, "forkd-criu: cannot read %s: run forkd setup again\n", path), 127;
  buf[len] = '\0';
  char *line[MAX_LINES];
  int lines = 0;
  for (char *save = NULL, *l = strtok_r(buf, "\n", &save); l && lines < MAX_LINES; l = strtok_r(NULL, "\n", &save)) line[lines++] = l;
  if (lines < 5) return fprintf(stderr, "forkd-criu: %s is short: run forkd setup again\n", path), 127;
  int swrk = argc == 3 && strcmp(argv[1], "swrk") == 0 ? parse_fd(argv[2]) : -1;
  if (swrk >= 0 && !getenv("FORKD_CRIU_ASK_VERSION")) {
    int r = answer(swrk, line[0]);
    if (r == 0) return 0;
    if (r != 1) return 1;
  }
  if (setenv("HOME", line[1], 1) != 0) return perror("forkd-criu: HOME"), 127;
  /* GnuTLS (for CRIU's TLS page server, which forkd never uses) otherwise initialises in a library
   * constructor at every CRIU start and tears down at every exit(), each forked helper's too: ~3 ms
   * of a snapshot's freeze here (three namespace dumpers and a user-namespace check exit in it). */
  if (setenv("GNUTLS_NO_IMPLICIT_INIT", "1", 1) != 0) return perror("forkd-criu: GNUTLS_NO_IMPLICIT_INIT"), 127;
  if (argc > 256) return fprintf(stderr, "forkd-criu: too many arguments\n"), 127;
  char *args[MAX_LINES + 4 + 256];
  int k = criu_args(line, lines, argc, argv, args);
  /* A dump's config (the action script) is named here, not to CRIU: a dump the relay carries needs none. */
  static char dump_config[4096], save[4096];
  const char *named = getenv(DUMP_CONFIG_ENV), *save_to = getenv(SAVE_REQUEST_ENV), *lv = getenv(DUMP_LOG_LEVEL_ENV);
  int level = lv && lv[0] >= '0' && lv[0] <= '4' && !lv[1] ? lv[0] - '0' : -1;
  snprintf(dump_config, sizeof dump_config, "%s", named ? named : "");
  snprintf(save, sizeof save, "%s", save_to ? save_to : "");
  unsetenv(DUMP_CONFIG_ENV);
  unsetenv(SAVE_REQUEST_ENV);
  unsetenv(DUMP_LOG_LEVEL_ENV);
  if (argc == 5 && strcmp(argv[1], "dump-saved") == 0) {
    char *swrk_argv[] = {argv[0], "swrk", "-", NULL};
    k = criu_args(line, lines, 3, swrk_argv, args);
    return relay_saved(argv[2], argv[3], argv[4], args, k - 1, level);
  }
  if (swrk >= 0 && *dump_config) {
    int r = relay_dump(swrk, args, k - 1, save, level);
    if (r >= 0) return r;
    if (setenv("CRIU_CONFIG_FILE", dump_config, 1) != 0) return perror("forkd-criu: CRIU_CONFIG_FILE"), 127;
  }
  execv(line[3], args);
  return perror(line[3]), 127;
}

int main(int argc, char **argv) {
  const char *base = strrchr(argv[0], '/');
  if (strcmp(base ? base + 1 : argv[0], "criu") == 0) return launch(argc, argv);
  if (argc == 4 && strcmp(argv[1], "answer") == 0) {
    int fd = parse_fd(argv[2]);
    return fd < 0 ? 1 : answer(fd, argv[3]);
  }
  if (argc == 4 && strcmp(argv[1], "record") == 0) return record(argv[2], argv[3]);
  fprintf(stderr, "usage: forkd-criu-version answer FD REPLY | record CRIU REPLY\n");
  return 2;
}
