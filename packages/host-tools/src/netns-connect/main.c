/*
 * forkd-netns-connect NETNS_PATH PORT
 *
 * Connects to 127.0.0.1:PORT (then [::1]:PORT) inside the network namespace
 * bound at NETNS_PATH and relays bytes: stdin -> socket, socket -> stdout.
 * The port proxy runs one per proxied connection, so a sandbox's servers are
 * reachable although its namespace has nothing but loopback.
 *
 * Exit: 0 when the connection ended, 2 when nothing listens on the port
 * (message on stderr), 1 on any other error.
 */
#include <arpa/inet.h>
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
#include <unistd.h>

static int connect_loopback(int port) {
	struct sockaddr_in v4 = { .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_in6 v6 = { .sin6_family = AF_INET6, .sin6_port = htons(port), .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&v4, sizeof v4) == 0) return fd;
	if (fd >= 0) close(fd);
	fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&v6, sizeof v6) == 0) return fd;
	if (fd >= 0) close(fd);
	return -1;
}

/* Moves what is readable from `in` to `out`; 0 on EOF, -1 on error. */
static int pump(int in, int out) {
	char buf[65536];
	ssize_t n = read(in, buf, sizeof buf);
	if (n <= 0) return n == 0 || errno == ECONNRESET ? 0 : -1;
	for (ssize_t off = 0; off < n;) {
		ssize_t w = write(out, buf + off, n - off);
		if (w < 0) {
			if (errno == EINTR) continue;
			return -1;
		}
		off += w;
	}
	return 1;
}

int main(int argc, char **argv) {
	if (argc != 3) {
		fprintf(stderr, "usage: forkd-netns-connect NETNS_PATH PORT\n");
		return 1;
	}
	char *end;
	long port = strtol(argv[2], &end, 10);
	if (*end || port < 1 || port > 65535) {
		fprintf(stderr, "invalid port %s\n", argv[2]);
		return 1;
	}
	int ns = open(argv[1], O_RDONLY | O_CLOEXEC);
	if (ns < 0 || setns(ns, CLONE_NEWNET) < 0) {
		fprintf(stderr, "cannot enter network namespace %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	close(ns);
	signal(SIGPIPE, SIG_IGN);
	int sk = connect_loopback((int)port);
	if (sk < 0) {
		fprintf(stderr, "nothing listens on port %ld in the sandbox\n", port);
		return 2;
	}
	struct pollfd p[2] = { { .fd = 0, .events = POLLIN }, { .fd = sk, .events = POLLIN } };
	int in_open = 1;
	for (;;) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR) continue;
			return 1;
		}
		if (in_open && (p[0].revents & (POLLIN | POLLHUP | POLLERR))) {
			int r = pump(0, sk);
			if (r < 0) return 1;
			if (r == 0) {
				/* The client finished sending; the server may still answer. */
				shutdown(sk, SHUT_WR);
				in_open = 0;
				p[0].fd = -1;
			}
		}
		if (p[1].revents & (POLLIN | POLLHUP | POLLERR)) {
			int r = pump(sk, 1);
			if (r <= 0) return r < 0 ? 1 : 0;
		}
	}
}
