/*
 * forkd-spawn: the daemon's resident process starter. Node's spawn forks the
 * whole daemon (page tables of hundreds of MB: 5-20 ms here, the event loop
 * stopped meanwhile, and a lifecycle operation runs ten tools); this process
 * is small, and starts each tool in memory it shares until the exec (see
 * start). Started by the daemon with a Node.js
 * IPC channel (NODE_CHANNEL_FD, JSON lines); it runs each tool with pipes,
 * collects its output and says how it ended. Exits when the channel closes.
 *
 * In (the daemon's child.send of a string; fields hex unless said):
 *   "s ID UMASK CWD ARGV ENV INPUT"   UMASK decimal, -1 to keep 077's caller's;
 *                                     CWD, INPUT hex or "-"; ARGV, ENV hex of
 *                                     NUL-terminated strings (ARGV[0] the file)
 *   "q ID UMASK CWD ARGV ENV INPUT"   the same, its stdout and stderr /dev/null
 *                                     (done at its exit; "out" and "err" empty)
 *   "d ID UMASK CWD ARGV ENV INPUT"   as q, in a session of its own (a helper
 *                                     daemon that must outlive the daemon's
 *                                     process group: a Ctrl-C, a stop), and
 *                                     held: killed if the channel closes
 *                                     before an "r" lets it go
 *   "r ID"                            let a held child go: it outlives this
 *                                     process (a lazy-pages daemon whose
 *                                     restore has begun serving)
 *   "k ID SIGNAL"                     signal a child (its timeout)
 * Out:
 *   {"id":ID,"pid":PID}                         it runs (exec succeeded)
 *   {"id":ID,"errno":E}                         it could not be run
 *   {"id":ID,"busy":true}                       no slot free: the daemon spawns it itself
 *   {"id":ID,"code":C,"signal":S,"out":"HEX","err":"HEX"}
 *                                               exited and both pipes closed
 * stdout keeps its last 32 MiB past 64 MiB, stderr its last 64 KiB, as the
 * daemon's own exec does.
 *
 * Why held: a daemon killed while a restore was being set up left its
 * lazy-pages daemon waiting for a connection that never came, for ever. Once
 * the restore is running the helper must live on (the restored tree faults
 * its pages from it), and the daemon says so with "r".
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_CHILDREN 256
#define LINE_MAX_BYTES (16 * 1024 * 1024)
#define OUT_MAX (64u << 20)
#define OUT_KEEP (32u << 20)
#define ERR_KEEP (64u << 10)

struct buf { char *p; size_t len, cap; };

struct child {
	long id;
	pid_t pid;       /* 0: slot free */
	int in, out, err; /* -1 once closed */
	struct buf input; size_t input_off;
	struct buf o, e;
	int exited, status;
	int held;        /* a "d" child not yet let go */
};

static struct child kids[MAX_CHILDREN];
static int chan;

static void die(const char *what) { perror(what); exit(1); }

static void put(struct buf *b, const char *p, size_t n) {
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->len + n) cap *= 2;
		char *q = realloc(b->p, cap);
		if (!q) die("realloc");
		b->p = q;
		b->cap = cap;
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
}

/* Keeps the last `keep` bytes once the buffer passes `max`. */
static void trim(struct buf *b, size_t max, size_t keep) {
	if (b->len <= max) return;
	memmove(b->p, b->p + b->len - keep, keep);
	b->len = keep;
}

static void clear(struct buf *b) { free(b->p); b->p = NULL; b->len = b->cap = 0; }

static void send_all(const char *p, size_t n) {
	while (n) {
		ssize_t w = write(chan, p, n);
		if (w < 0) { if (errno == EINTR) continue; die("write channel"); }
		p += w;
		n -= (size_t)w;
	}
}

static void sendf(const char *fmt, long id, long a) {
	char line[128];
	int n = snprintf(line, sizeof line, fmt, id, a);
	send_all(line, (size_t)n);
}

static int unhex(const char *s, size_t n, struct buf *out) {
	if (n % 2) return -1;
	for (size_t i = 0; i < n; i += 2) {
		int v = 0;
		for (int k = 0; k < 2; k++) {
			char c = s[i + k];
			int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
			if (d < 0) return -1;
			v = v * 16 + d;
		}
		char ch = (char)v;
		put(out, &ch, 1);
	}
	return 0;
}

/* NUL-terminated strings of a buffer as a NULL-terminated vector (into the buffer). */
static char **vec(struct buf *b) {
	size_t n = 0;
	for (size_t i = 0; i < b->len; i++) n += b->p[i] == 0;
	char **v = calloc(n + 1, sizeof *v);
	if (!v) die("calloc");
	size_t k = 0, start = 0;
	for (size_t i = 0; i < b->len; i++) if (b->p[i] == 0) { v[k++] = b->p + start; start = i + 1; }
	return v;
}

/* The file as execvp would find it, but on the PATH of the child's own environment. */
static void exec_file(const char *file, char **argv, char **envp) {
	if (strchr(file, '/')) { execve(file, argv, envp); return; }
	const char *path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
	for (char **e = envp; *e; e++) if (!strncmp(*e, "PATH=", 5)) path = *e + 5;
	int err = ENOENT;
	char full[4096];
	for (const char *p = path;; p = strchr(p, ':') + 1) {
		const char *end = strchrnul(p, ':');
		int n = snprintf(full, sizeof full, "%.*s%s%s", (int)(end - p), p, end == p ? "" : "/", file);
		if (n > 0 && (size_t)n < sizeof full) {
			execve(full, argv, envp);
			if (errno != ENOENT && errno != ENOTDIR) err = errno;
		}
		if (!*end) break;
	}
	errno = err;
}

static void child_side(int report, int in, int out, int err, long mask, int session, const char *cwd, char **argv, char **envp) {
	sigset_t none;
	if (session) setsid();
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	if (in < 0) in = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (out < 0) out = err = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0) goto fail;
	if (mask >= 0) umask((mode_t)mask);
	if (cwd && chdir(cwd) != 0) goto fail;
	exec_file(argv[0], argv, envp);
fail:;
	int e = errno;
	if (write(report, &e, sizeof e) < 0) {}
	_exit(127);
}

struct child_args { int report, in, out, err; long mask; int session; const char *cwd; char **argv, **envp; };

static int child_main(void *p) {
	const struct child_args *a = p;
	child_side(a->report, a->in, a->out, a->err, a->mask, a->session, a->cwd, a->argv, a->envp);
	return 127;
}

/* The child's own stack: it runs in this process's memory until its exec, while this one waits. */
static char child_stack[64 * 1024] __attribute__((aligned(16)));

/*
 * A child that shares this process's memory until its exec, as posix_spawn's
 * is (which cannot set a umask): a fork copies the page tables, and both sides
 * then fault back every page they write, ~1 ms per tool on a host whose page
 * faults trap to a hypervisor. The child only makes system calls (no locks,
 * no allocation) and has no handler to run: SIGPIPE is ignored and SIGCHLD
 * read from a signalfd here.
 */
static pid_t start_child(const struct child_args *a) {
	return clone(child_main, child_stack + sizeof child_stack, CLONE_VM | CLONE_VFORK | SIGCHLD, (void *)a);
}

static void nonblock(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

/* QUIET: the tool's stdout and stderr are /dev/null, and it is done when it exits. runc
   starting a detached container passes its stdio to the container's init, which would
   hold pipes of ours open for the sandbox's life. */
static void start(long id, int quiet, int session, long mask, struct buf *cwd, struct buf *args, struct buf *env, struct buf *input) {
	struct child *c = NULL;
	for (int i = 0; i < MAX_CHILDREN && !c; i++) if (!kids[i].pid) c = &kids[i];
	char **argv = vec(args), **envp = vec(env);
	if (!c || !argv[0]) { if (!c) sendf("{\"id\":%ld,\"busy\":true}\n", id, 0); else sendf("{\"id\":%ld,\"errno\":%ld}\n", id, EINVAL); goto out; }
	int po[2] = {-1, -1}, pe[2] = {-1, -1}, pi[2] = {-1, -1}, rep[2];
	if ((!quiet && (pipe2(po, O_CLOEXEC) || pipe2(pe, O_CLOEXEC))) || pipe2(rep, O_CLOEXEC) || (input->len && pipe2(pi, O_CLOEXEC))) die("pipe");
	if (cwd->len) put(cwd, "", 1);
	struct child_args a = { rep[1], pi[0], po[1], pe[1], mask, session, cwd->len ? cwd->p : NULL, argv, envp };
	pid_t pid = start_child(&a);
	if (pid < 0) {
		/* Out of processes (a pids limit): this tool fails, the others go on. */
		int e = errno;
		if (!quiet) { close(po[0]); close(po[1]); close(pe[0]); close(pe[1]); }
		close(rep[0]); close(rep[1]);
		if (pi[0] >= 0) { close(pi[0]); close(pi[1]); }
		sendf("{\"id\":%ld,\"errno\":%ld}\n", id, e);
		goto out;
	}
	if (!quiet) { close(po[1]); close(pe[1]); }
	close(rep[1]);
	if (pi[0] >= 0) close(pi[0]);
	int e = 0;
	ssize_t r;
	while ((r = read(rep[0], &e, sizeof e)) < 0 && errno == EINTR) {}
	close(rep[0]);
	if (r == sizeof e) {
		/* Not run: reaped here, never reported as an exit. */
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {}
		if (!quiet) { close(po[0]); close(pe[0]); }
		if (pi[1] >= 0) close(pi[1]);
		sendf("{\"id\":%ld,\"errno\":%ld}\n", id, e);
		goto out;
	}
	*c = (struct child){ .id = id, .pid = pid, .in = pi[1], .out = po[0], .err = pe[0], .held = session };
	if (!quiet) { nonblock(c->out); nonblock(c->err); }
	if (c->in >= 0) { nonblock(c->in); c->input = *input; *input = (struct buf){0}; }
	sendf("{\"id\":%ld,\"pid\":%ld}\n", id, pid);
out:
	free(argv);
	free(envp);
}

static void hex_into(struct buf *line, const struct buf *b) {
	static const char d[] = "0123456789abcdef";
	char chunk[8192];
	size_t n = 0;
	for (size_t i = 0; i < b->len; i++) {
		unsigned char ch = (unsigned char)b->p[i];
		chunk[n++] = d[ch >> 4];
		chunk[n++] = d[ch & 15];
		if (n == sizeof chunk) { put(line, chunk, n); n = 0; }
	}
	put(line, chunk, n);
}

static void finish_if_done(struct child *c) {
	if (!c->pid || !c->exited || c->out >= 0 || c->err >= 0) return;
	struct buf line = {0};
	char head[128];
	int code = WIFEXITED(c->status) ? WEXITSTATUS(c->status) : -1;
	int sig = WIFSIGNALED(c->status) ? WTERMSIG(c->status) : 0;
	int n = snprintf(head, sizeof head, "{\"id\":%ld,\"code\":%d,\"signal\":%d,\"out\":\"", c->id, code, sig);
	put(&line, head, (size_t)n);
	hex_into(&line, &c->o);
	put(&line, "\",\"err\":\"", 9);
	hex_into(&line, &c->e);
	put(&line, "\"}\n", 3);
	send_all(line.p, line.len);
	clear(&line);
	if (c->in >= 0) close(c->in);
	clear(&c->o); clear(&c->e); clear(&c->input);
	*c = (struct child){0};
}

static void drain(struct child *c, int *fd, struct buf *b, int is_out) {
	char tmp[65536];
	for (;;) {
		ssize_t r = read(*fd, tmp, sizeof tmp);
		if (r > 0) {
			put(b, tmp, (size_t)r);
			if (is_out) trim(b, OUT_MAX, OUT_KEEP); else trim(b, 2 * ERR_KEEP, ERR_KEEP);
			continue;
		}
		if (r < 0 && errno == EINTR) continue;
		if (r < 0 && errno == EAGAIN) return;
		close(*fd);
		*fd = -1;
		break;
	}
	if (!is_out) trim(b, ERR_KEEP, ERR_KEEP);
	finish_if_done(c);
}

static void feed(struct child *c) {
	while (c->input_off < c->input.len) {
		ssize_t w = write(c->in, c->input.p + c->input_off, c->input.len - c->input_off);
		if (w > 0) { c->input_off += (size_t)w; continue; }
		if (w < 0 && errno == EINTR) continue;
		if (w < 0 && errno == EAGAIN) return;
		break; /* EPIPE: the child stopped reading */
	}
	close(c->in);
	c->in = -1;
	clear(&c->input);
}

static void reap(void) {
	int status;
	pid_t pid;
	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		for (int i = 0; i < MAX_CHILDREN; i++) {
			if (kids[i].pid != pid) continue;
			kids[i].exited = 1;
			kids[i].status = status;
			finish_if_done(&kids[i]);
		}
	}
}

/* One request line (the JSON string's content: hex, digits, spaces and '-' only). */
static void request(char *s) {
	char *f[8];
	int n = 0;
	for (char *tok = strtok(s, " "); tok && n < 8; tok = strtok(NULL, " ")) f[n++] = tok;
	if (n == 2 && !strcmp(f[0], "r")) {
		long id = atol(f[1]);
		for (int i = 0; i < MAX_CHILDREN; i++) if (kids[i].pid && kids[i].id == id) kids[i].held = 0;
		return;
	}
	if (n == 3 && !strcmp(f[0], "k")) {
		long id = atol(f[1]);
		for (int i = 0; i < MAX_CHILDREN; i++) if (kids[i].pid && kids[i].id == id && !kids[i].exited) kill(kids[i].pid, atoi(f[2]));
		return;
	}
	/* s: start, its output collected; q: start quietly (see start); d: quietly, in its own session. */
	if (n != 7 || (strcmp(f[0], "s") && strcmp(f[0], "q") && strcmp(f[0], "d"))) { fprintf(stderr, "forkd-spawn: unreadable request\n"); return; }
	long id = atol(f[1]), mask = atol(f[2]);
	struct buf b[4] = {{0}};
	int bad = 0;
	for (int k = 0; k < 4; k++) if (strcmp(f[3 + k], "-")) bad |= unhex(f[3 + k], strlen(f[3 + k]), &b[k]);
	if (bad) sendf("{\"id\":%ld,\"errno\":%ld}\n", id, EINVAL);
	else start(id, f[0][0] != 's', f[0][0] == 'd', mask, &b[0], &b[1], &b[2], &b[3]);
	for (int k = 0; k < 4; k++) clear(&b[k]);
}

static int read_channel(struct buf *acc) {
	char tmp[65536];
	ssize_t r = read(chan, tmp, sizeof tmp);
	if (r < 0) return errno == EINTR || errno == EAGAIN ? 0 : -1;
	if (r == 0) return -1;
	put(acc, tmp, (size_t)r);
	char *nl;
	while ((nl = memchr(acc->p, '\n', acc->len))) {
		size_t n = (size_t)(nl - acc->p);
		/* Node sends a string as a JSON string: "..." (its content needs no escapes). */
		if (n >= 2 && acc->p[0] == '"' && acc->p[n - 1] == '"') { acc->p[n - 1] = 0; request(acc->p + 1); }
		memmove(acc->p, nl + 1, acc->len - n - 1);
		acc->len -= n + 1;
	}
	if (acc->len > LINE_MAX_BYTES) { fprintf(stderr, "forkd-spawn: request too long\n"); return -1; }
	return 0;
}

int main(void) {
	const char *fdenv = getenv("NODE_CHANNEL_FD");
	if (!fdenv) { fprintf(stderr, "forkd-spawn: run by the forkd daemon only (no NODE_CHANNEL_FD)\n"); return 2; }
	chan = atoi(fdenv);
	signal(SIGPIPE, SIG_IGN);
	sigset_t chld;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, NULL);
	int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0) die("signalfd");
	fcntl(chan, F_SETFD, FD_CLOEXEC);
	struct buf acc = {0};
	struct pollfd p[2 + 3 * MAX_CHILDREN];
	for (;;) {
		int n = 0;
		p[n++] = (struct pollfd){ .fd = chan, .events = POLLIN };
		p[n++] = (struct pollfd){ .fd = sfd, .events = POLLIN };
		for (int i = 0; i < MAX_CHILDREN; i++) {
			if (!kids[i].pid) continue;
			if (kids[i].out >= 0) p[n++] = (struct pollfd){ .fd = kids[i].out, .events = POLLIN };
			if (kids[i].err >= 0) p[n++] = (struct pollfd){ .fd = kids[i].err, .events = POLLIN };
			if (kids[i].in >= 0) p[n++] = (struct pollfd){ .fd = kids[i].in, .events = POLLOUT };
		}
		if (poll(p, (nfds_t)n, -1) < 0) { if (errno == EINTR) continue; die("poll"); }
		if (p[1].revents) {
			struct signalfd_siginfo si;
			while (read(sfd, &si, sizeof si) > 0) {}
			reap();
		}
		for (int k = 2; k < n; k++) {
			if (!p[k].revents) continue;
			for (int i = 0; i < MAX_CHILDREN; i++) {
				struct child *c = &kids[i];
				if (!c->pid) continue;
				if (c->out == p[k].fd) drain(c, &c->out, &c->o, 1);
				else if (c->err == p[k].fd) drain(c, &c->err, &c->e, 0);
				else if (c->in == p[k].fd) feed(c);
				else continue;
				break;
			}
		}
		if (p[0].revents && read_channel(&acc) < 0) {
			/* The daemon is gone: what it had not let go has no one to finish it. */
			for (int i = 0; i < MAX_CHILDREN; i++) if (kids[i].pid && kids[i].held && !kids[i].exited) kill(kids[i].pid, SIGKILL);
			return 0;
		}
	}
}
