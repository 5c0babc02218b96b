/*
 * forkd-splice: relays bytes between two connected sockets, fd 0 and fd 1,
 * in both directions with splice(2) (in the kernel, no copy to user space),
 * until both directions have ended. The egress proxy hands a connection to
 * it once the connection has carried enough bytes to be worth a process:
 * Node's user-space relay tops out well below the link's speed.
 *
 * One direction per process (a fork), blocking: an end of stream is passed
 * on as a half-close (shutdown SHUT_WR); an error in either direction shuts
 * both sockets down, so the other direction ends too. Exit 0 when both ended.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHUNK (1 << 20)

static void blocking(int fd) {
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
}

/* 0: the source ended; -1: an error. */
static int relay(int from, int to) {
	int p[2];
	if (pipe2(p, O_CLOEXEC) != 0) return -1;
	fcntl(p[1], F_SETPIPE_SZ, CHUNK);
	for (;;) {
		ssize_t n = splice(from, NULL, p[1], NULL, CHUNK, SPLICE_F_MOVE | SPLICE_F_MORE);
		if (n == 0) return 0;
		if (n < 0) {
			if (errno == EINTR) continue;
			return -1;
		}
		while (n > 0) {
			ssize_t w = splice(p[0], NULL, to, NULL, (size_t)n, SPLICE_F_MOVE | SPLICE_F_MORE);
			if (w < 0 && errno == EINTR) continue;
			if (w <= 0) return -1;
			n -= w;
		}
	}
}

int main(void) {
	int a = 0, b = 1;
	blocking(a);
	blocking(b);
	signal(SIGPIPE, SIG_IGN);
	pid_t child = fork();
	if (child < 0) return 1;
	int from = child == 0 ? b : a, to = child == 0 ? a : b;
	if (relay(from, to) == 0) {
		shutdown(to, SHUT_WR);
	} else {
		shutdown(a, SHUT_RDWR);
		shutdown(b, SHUT_RDWR);
	}
	if (child == 0) return 0;
	int st = 0;
	while (waitpid(child, &st, 0) < 0 && errno == EINTR) {}
	return 0;
}
