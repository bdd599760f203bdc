/* proc.h: child processes for tests (header only). Starts a helper such as
 * test/tools/httpd.py, waits for the "ready <port>" line it prints on
 * stdout, and stops it again; also runs a command to completion.
 *
 *   struct carp_test_proc p;
 *   char *argv[] = {"python3", path, NULL};
 *   if (carp_test_proc_start(&p, argv, 10000) != 0) ...fail...
 *   ... connect to 127.0.0.1:p.port ...
 *   carp_test_proc_stop(&p);
 *
 * A child dies with its parent (PR_SET_PDEATHSIG), so a crashed test leaves
 * no server behind. The child's stderr is the test's, so its complaints
 * show in ctest output. Functions return 0 or -1 and print why. */
#ifndef CARP_TEST_PROC_H
#define CARP_TEST_PROC_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct carp_test_proc {
  pid_t pid;  /* 0 when not running */
  int port;   /* from the ready line */
  int out_fd; /* read end of the child's stdout, or -1 */
};

/* Marks p as not running (so carp_test_proc_stop on it does nothing). */
static inline void carp_test_proc_init(struct carp_test_proc *p)
{
  p->pid = 0;
  p->port = 0;
  p->out_fd = -1;
}

static inline long long carp_test_now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* fork + exec argv[0] (searched in PATH) with stdout on a pipe. */
static inline pid_t carp_test_spawn(char *const argv[], int *out_fd)
{
  int fds[2];
  pid_t pid, parent = getpid();

  if (pipe2(fds, O_CLOEXEC) != 0) {
    perror("pipe2");
    return -1;
  }
  pid = fork();
  if (pid < 0) {
    perror("fork");
    close(fds[0]);
    close(fds[1]);
    return -1;
  }
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent)
      _exit(127);
    if (dup2(fds[1], STDOUT_FILENO) < 0)
      _exit(127);
    signal(SIGPIPE, SIG_DFL);
    execvp(argv[0], argv);
    fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  close(fds[1]);
  *out_fd = fds[0];
  return pid;
}

/* Reads one line (without the newline) within timeout_ms. */
static inline int carp_test_read_line(int fd, char *line, size_t size,
                                      int timeout_ms)
{
  long long deadline = carp_test_now_ms() + timeout_ms;
  size_t n = 0;

  while (n + 1 < size) {
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    long long left = deadline - carp_test_now_ms();
    ssize_t r;
    int pr;
    if (left <= 0) {
      fprintf(stderr, "proc: no line within %d ms\n", timeout_ms);
      return -1;
    }
    pr = poll(&pfd, 1, (int)left);
    if (pr < 0 && errno == EINTR)
      continue;
    if (pr <= 0)
      continue;
    r = read(fd, line + n, 1);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0) {
      fprintf(stderr, "proc: child closed its stdout\n");
      return -1;
    }
    if (line[n] == '\n') {
      line[n] = '\0';
      return 0;
    }
    n++;
  }
  fprintf(stderr, "proc: line too long\n");
  return -1;
}

static inline void carp_test_proc_stop(struct carp_test_proc *p)
{
  int status;
  if (p->pid > 0) {
    kill(p->pid, SIGTERM);
    while (waitpid(p->pid, &status, 0) < 0 && errno == EINTR)
      ;
  }
  if (p->out_fd >= 0)
    close(p->out_fd);
  p->pid = 0;
  p->out_fd = -1;
}

/* Starts argv and waits up to timeout_ms for "ready <port>". */
static inline int carp_test_proc_start(struct carp_test_proc *p,
                                       char *const argv[], int timeout_ms)
{
  char line[256];
  char *end;
  long port;

  carp_test_proc_init(p);
  p->pid = carp_test_spawn(argv, &p->out_fd);
  if (p->pid < 0) {
    p->pid = 0;
    return -1;
  }
  if (carp_test_read_line(p->out_fd, line, sizeof(line), timeout_ms) != 0)
    goto fail;
  if (strncmp(line, "ready ", 6) != 0) {
    fprintf(stderr, "proc: unexpected first line: %s\n", line);
    goto fail;
  }
  errno = 0;
  port = strtol(line + 6, &end, 10);
  if (errno || *end || port <= 0 || port > 65535) {
    fprintf(stderr, "proc: bad port in: %s\n", line);
    goto fail;
  }
  p->port = (int)port;
  return 0;
fail:
  carp_test_proc_stop(p);
  return -1;
}

/* Runs argv to completion; returns its exit status, or -1. */
static inline int carp_test_run(char *const argv[])
{
  int fd, status;
  char buf[512];
  pid_t pid = carp_test_spawn(argv, &fd);

  if (pid < 0)
    return -1;
  /* Drain its stdout so it never blocks on a full pipe. */
  for (;;) {
    ssize_t r = read(fd, buf, sizeof(buf));
    if (r > 0 || (r < 0 && errno == EINTR))
      continue;
    break;
  }
  close(fd);
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

#endif
