/* Small file and clock helpers shared by the action's parts. */
#ifndef FORKD_CRIU_ACTION_IO_H
#define FORKD_CRIU_ACTION_IO_H

#include <regex.h>
#include <time.h>

long long now_ns(clockid_t clk);

/* Writes s to file (opened for this write only); -1 with errno on failure. */
int write_str(const char *file, const char *s);

/* Whether the whole of fd (read from its start) matches re: 1, 0, or -1 on a read error. */
int matches(int fd, regex_t *re);

#endif
