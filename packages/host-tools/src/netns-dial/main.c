/*
 * forkd-netns-dial [CONNECT_MS]: the port proxy's resident dialer. Started by the daemon
 * with a Node.js IPC channel (NODE_CHANNEL_FD, JSON lines); for each request
 * it enters the network namespace bound at PATH, makes a socket there, goes
 * back to its own namespace and connects the socket (non-blocking) to
 * 127.0.0.1:PORT, then [::1]:PORT. The connected socket is handed to the
 * daemon over the channel (SCM_RIGHTS, as Node sends a net.Socket), so no
 * process is started per connection and no byte is relayed by this one.
 *
 * In (the daemon's child.send of a string, then Node's own acks):
 *   "ID PORT PATH"\n
 *   {"cmd":"NODE_HANDLE_ACK"}\n  /  {"cmd":"NODE_HANDLE_NACK"}\n
 * Out:
 *   {"cmd":"NODE_HANDLE","type":"net.Socket","msg":{"id":ID}}\n  + the fd
 *   {"id":ID,"refused":true}\n     nothing listens on PORT
 *   {"id":ID,"error":"TEXT"}\n     anything else (TEXT has no quote or backslash)
 * One handle is in flight at a time (the next waits for the ack), as Node
 * itself sends them: a read of the channel never carries two.
 *
 * A sandbox cannot stall it: connects are non-blocking and time out after
 * CONNECT_MS (default 10000; a listener whose backlog is full never completes one); at most
 * MAX_PENDING are under way (the daemon caps connections below that).
 * Exits when the channel closes.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_PENDING 1024
#define CONNECT_MS_DEFAULT 10000
#define LINE_MAX_BYTES 8192

struct dial {
	long id;
	int port;
	int ns;     /* the sandbox's namespace, kept for the [::1] attempt */
	int fd;     /* the socket being connected; -1: slot free */
	int v6;
	long long deadline;
};

static int chan;
static long connect_ms = CONNECT_MS_DEFAULT;
static int self_ns;
static struct dial dials[MAX_PENDING];
/* Connected sockets waiting for their turn to be sent (FIFO), and the one in flight. */
static struct { long id; int fd; } ready[MAX_PENDING];
static int ready_head, ready_len, in_flight, resends, active;

static long long now_ms(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void die(const char *what) {
	fprintf(stderr, "forkd-netns-dial: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void send_text(const char *s) {
	size_t n = strlen(s);
	while (n) {
		ssize_t w = write(chan, s, n);
		if (w < 0 && errno == EINTR) continue;
		if (w < 0) die("write to the daemon");
		s += w;
		n -= (size_t)w;
	}
}

static void reply_error(long id, const char *what, int err) {
	char buf[256];
	snprintf(buf, sizeof buf, "{\"id\":%ld,\"error\":\"%s: %s\"}\n", id, what, strerror(err));
	send_text(buf);
}

static void reply_refused(long id) {
	char buf[64];
	snprintf(buf, sizeof buf, "{\"id\":%ld,\"refused\":true}\n", id);
	send_text(buf);
}

/* Sends the oldest ready socket with its message, unless one is already waiting for its ack. */
static void send_next_handle(void) {
	if (in_flight || !ready_len) return;
	char buf[128];
	int len = snprintf(buf, sizeof buf, "{\"cmd\":\"NODE_HANDLE\",\"type\":\"net.Socket\",\"msg\":{\"id\":%ld}}\n", ready[ready_head].id);
	struct iovec iov = { .iov_base = buf, .iov_len = (size_t)len };
	union { struct cmsghdr h; char b[CMSG_SPACE(sizeof(int))]; } c;
	memset(&c, 0, sizeof c);
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.b, .msg_controllen = sizeof c.b };
	struct cmsghdr *h = CMSG_FIRSTHDR(&m);
	h->cmsg_level = SOL_SOCKET;
	h->cmsg_type = SCM_RIGHTS;
	h->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(h), &ready[ready_head].fd, sizeof(int));
	ssize_t w;
	do w = sendmsg(chan, &m, MSG_NOSIGNAL);
	while (w < 0 && errno == EINTR);
	if (w != len) die("sendmsg to the daemon");
	in_flight = 1;
}

/* The in-flight socket was received (ack) or lost on the way (nack: sent again, three times at most). */
static void handle_ack(int ok) {
	if (!in_flight) return;
	in_flight = 0;
	if (!ok && ++resends <= 3) return send_next_handle();
	if (!ok) reply_error(ready[ready_head].id, "handing over the socket", EPROTO);
	close(ready[ready_head].fd);
	ready_head = (ready_head + 1) % MAX_PENDING;
	ready_len--;
	resends = 0;
	send_next_handle();
}

static void finish(struct dial *d, int connected) {
	if (connected) {
		ready[(ready_head + ready_len) % MAX_PENDING].id = d->id;
		ready[(ready_head + ready_len) % MAX_PENDING].fd = d->fd;
		ready_len++;
	} else if (d->fd >= 0) {
		close(d->fd);
	}
	close(d->ns);
	d->fd = -1;
	active--;
	send_next_handle();
}

/*
 * A socket of the sandbox's namespace (it stays there once made), made
 * between two setns calls; the dialer is never left in a sandbox's namespace.
 */
static int socket_in(int ns, int v6) {
	if (setns(ns, CLONE_NEWNET) < 0) return -1;
	int fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int err = errno;
	if (setns(self_ns, CLONE_NEWNET) < 0) die("setns back to the dialer's own namespace");
	errno = err;
	return fd;
}

/* Starts (or, after a refusal on 127.0.0.1, retries on ::1) the dial's connect; 1 while it is under way. */
static int start_connect(struct dial *d) {
	for (;;) {
		d->fd = socket_in(d->ns, d->v6);
		if (d->fd < 0) {
			reply_error(d->id, "socket in the sandbox's namespace", errno);
			finish(d, 0);
			return 0;
		}
		struct sockaddr_in v4 = { .sin_family = AF_INET, .sin_port = htons(d->port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		struct sockaddr_in6 v6 = { .sin6_family = AF_INET6, .sin6_port = htons(d->port), .sin6_addr = IN6ADDR_LOOPBACK_INIT };
		int r = d->v6 ? connect(d->fd, (struct sockaddr *)&v6, sizeof v6) : connect(d->fd, (struct sockaddr *)&v4, sizeof v4);
		if (r == 0) {
			finish(d, 1);
			return 0;
		}
		if (errno == EINPROGRESS) return 1;
		if (d->v6) {
			/* ::1 may not even exist (IPv6 off): the refusal on 127.0.0.1 is the answer. */
			reply_refused(d->id);
			finish(d, 0);
			return 0;
		}
		close(d->fd);
		d->v6 = 1;
	}
}

/* A connect under way finished (POLLOUT/POLLERR) or timed out. */
static void settle(struct dial *d, int timed_out) {
	int err = 0;
	socklen_t len = sizeof err;
	if (timed_out) err = ETIMEDOUT;
	else if (getsockopt(d->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0) err = errno;
	if (!err) return finish(d, 1);
	if (timed_out) {
		reply_error(d->id, "connect", err);
		return finish(d, 0);
	}
	if (!d->v6) {
		close(d->fd);
		d->v6 = 1;
		start_connect(d);
		return;
	}
	reply_refused(d->id);
	finish(d, 0);
}

/* Node's JSON of a string: "..." with \" \\ \/ escaped (a path has no control character). */
static int unquote(char *s, char **out) {
	size_t n = strlen(s);
	if (n < 2 || s[0] != '"' || s[n - 1] != '"') return -1;
	char *w = s;
	for (char *r = s + 1; r < s + n - 1; r++) {
		if (*r == '\\') {
			r++;
			if (*r != '"' && *r != '\\' && *r != '/') return -1;
		}
		*w++ = *r;
	}
	*w = 0;
	*out = s;
	return 0;
}

static void request(char *line) {
	if (strstr(line, "\"NODE_HANDLE_ACK\"")) return handle_ack(1);
	if (strstr(line, "\"NODE_HANDLE_NACK\"")) return handle_ack(0);
	if (line[0] == '{') return; /* another of Node's internal messages */
	char *text, *end;
	if (unquote(line, &text) < 0) die("unreadable request");
	long id = strtol(text, &end, 10);
	long port = *end == ' ' ? strtol(end + 1, &end, 10) : 0;
	if (*end != ' ' || id < 0 || port < 1 || port > 65535) die("malformed request");
	struct dial *d = NULL;
	for (int i = 0; i < MAX_PENDING && !d; i++)
		if (dials[i].fd < 0) d = &dials[i];
	if (!d || active + ready_len >= MAX_PENDING) return reply_error(id, "dialer", EBUSY);
	int ns = open(end + 1, O_RDONLY | O_CLOEXEC);
	if (ns < 0) return reply_error(id, "the sandbox's namespace", errno);
	*d = (struct dial){ .id = id, .port = (int)port, .ns = ns, .fd = -1, .v6 = 0, .deadline = now_ms() + connect_ms };
	active++;
	start_connect(d);
}

/* Reads what the channel has and handles each complete line; exits at its end. */
static void read_channel(void) {
	static char buf[LINE_MAX_BYTES];
	static size_t len;
	ssize_t n;
	do n = read(chan, buf + len, sizeof buf - len);
	while (n < 0 && errno == EINTR);
	if (n < 0) die("read from the daemon");
	if (n == 0) exit(0);
	len += (size_t)n;
	char *start = buf, *nl;
	while ((nl = memchr(start, '\n', buf + len - start))) {
		*nl = 0;
		request(start);
		start = nl + 1;
	}
	len -= (size_t)(start - buf);
	memmove(buf, start, len);
	if (len == sizeof buf) die("request line too long");
}

int main(int argc, char **argv) {
	char *end;
	if (argc > 2 || (argc == 2 && ((connect_ms = strtol(argv[1], &end, 10)) < 1 || *end))) {
		fprintf(stderr, "usage: forkd-netns-dial [CONNECT_MS]\n");
		return 1;
	}
	const char *fd = getenv("NODE_CHANNEL_FD");
	const char *mode = getenv("NODE_CHANNEL_SERIALIZATION_MODE");
	if (!fd || (mode && strcmp(mode, "json") != 0)) {
		fprintf(stderr, "forkd-netns-dial: start it with a Node.js IPC channel (serialization json)\n");
		return 1;
	}
	chan = atoi(fd);
	self_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (self_ns < 0) die("open /proc/self/ns/net");
	signal(SIGPIPE, SIG_IGN);
	for (int i = 0; i < MAX_PENDING; i++) dials[i].fd = -1;
	static struct pollfd p[MAX_PENDING + 1];
	static struct dial *at[MAX_PENDING + 1];
	for (;;) {
		int n = 0;
		long long t = now_ms(), wait = -1;
		p[n++] = (struct pollfd){ .fd = chan, .events = POLLIN };
		for (int i = 0; i < MAX_PENDING; i++) {
			if (dials[i].fd < 0) continue;
			if (dials[i].deadline <= t) {
				settle(&dials[i], 1);
				continue;
			}
			if (wait < 0 || dials[i].deadline - t < wait) wait = dials[i].deadline - t;
			at[n] = &dials[i];
			p[n++] = (struct pollfd){ .fd = dials[i].fd, .events = POLLOUT };
		}
		if (poll(p, (nfds_t)n, (int)wait) < 0) {
			if (errno == EINTR) continue;
			die("poll");
		}
		for (int i = 1; i < n; i++)
			if (p[i].revents && at[i]->fd == p[i].fd) settle(at[i], 0);
		if (p[0].revents) read_channel();
	}
}
