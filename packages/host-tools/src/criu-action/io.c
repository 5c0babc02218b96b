#include "io.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

long long now_ns(clockid_t clk)
{
    struct timespec ts;
    clock_gettime(clk, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int write_str(const char *file, const char *s)
{
    int fd = open(file, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = write(fd, s, strlen(s));
    int e = errno;
    close(fd);
    errno = e;
    return n == (ssize_t)strlen(s) ? 0 : -1;
}

int matches(int fd, regex_t *re)
{
    char buf[4096];
    if (lseek(fd, 0, SEEK_SET) < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    if (n < 0)
        return -1;
    buf[n] = 0;
    return regexec(re, buf, 0, NULL, 0) == 0;
}

long v1_next_sleep(long ns)
{
    const long max = 1000000L;
    return ns * 2 < max ? ns * 2 : max;
}

int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}
