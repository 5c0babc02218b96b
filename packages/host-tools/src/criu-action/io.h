/* Small file and clock helpers shared by the action's parts. */
#ifndef FORKD_CRIU_ACTION_IO_H
#define FORKD_CRIU_ACTION_IO_H

#include <regex.h>
#include <time.h>

long long now_ns(clockid_t clk);

/* Writes s to file (opened for this write only); -1 with errno on failure. */
int write_str(const char *file, const char *s);

/* v1's freezer.state has no notification: looks are spaced from 20 us, doubling to 1 ms. */
#define V1_FIRST_SLEEP_NS 20000L
long v1_next_sleep(long ns);

int ends_with(const char *s, const char *suffix);

/* Whether the whole of fd (read from its start) matches re: 1, 0, or -1 on a read error. */
int matches(int fd, regex_t *re);

#endif
