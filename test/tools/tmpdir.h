/* tmpdir.h: scratch directories and small files for tests (header only).
 *
 *   char dir[64];
 *   carp_test_tmpdir(dir, sizeof(dir), "http");  -> /tmp/carp-http-XXXXXX
 *   ... carp_test_read_file(path, &len) (free() the result) ...
 *   carp_test_rmtree(dir);
 *
 * Test code only: it uses malloc/free directly, since what it returns is
 * not Carpenter data. */
#ifndef CARP_TEST_TMPDIR_H
#define CARP_TEST_TMPDIR_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Creates $TMPDIR/carp-<tag>-XXXXXX; returns 0 or -1. */
static inline int carp_test_tmpdir(char *out, size_t size, const char *tag)
{
  const char *base = getenv("TMPDIR");
  int n;
  if (!base || !*base)
    base = "/tmp";
  n = snprintf(out, size, "%s/carp-%s-XXXXXX", base, tag);
  if (n < 0 || (size_t)n >= size)
    return -1;
  if (!mkdtemp(out)) {
    perror("mkdtemp");
    return -1;
  }
  return 0;
}

static inline int carp_test_rm_entry(const char *path, const struct stat *sb,
                                     int type, struct FTW *ftw)
{
  (void)sb;
  (void)type;
  (void)ftw;
  if (remove(path) != 0)
    perror(path);
  return 0;
}

/* rm -rf dir (does not follow symlinks). */
static inline void carp_test_rmtree(const char *dir)
{
  if (dir && *dir)
    nftw(dir, carp_test_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* cmocka setup and teardown for a test that needs a scratch folder:
 *   cmocka_unit_test_setup_teardown(test_x, carp_test_tmpdir_setup,
 *                                   carp_test_tmpdir_teardown)
 * *state is the folder's path; the teardown removes it whether the test
 * passed or failed. */
static inline int carp_test_tmpdir_setup(void **state)
{
  char *dir = malloc(256);
  if (!dir || carp_test_tmpdir(dir, 256, "test") != 0) {
    free(dir);
    return -1;
  }
  *state = dir;
  return 0;
}

static inline int carp_test_tmpdir_teardown(void **state)
{
  carp_test_rmtree(*state);
  free(*state);
  *state = NULL;
  return 0;
}

/* Reads a whole file, NUL-terminated; NULL on error. free() the result. */
static inline char *carp_test_read_file(const char *path, size_t *len)
{
  FILE *f = fopen(path, "rb");
  char *buf = NULL;
  size_t cap = 0, n = 0;

  if (!f) {
    perror(path);
    return NULL;
  }
  for (;;) {
    size_t r;
    if (cap - n < 4096) {
      char *nb = realloc(buf, cap + 65536);
      if (!nb) {
        free(buf);
        fclose(f);
        return NULL;
      }
      buf = nb;
      cap += 65536;
    }
    r = fread(buf + n, 1, cap - n - 1, f);
    n += r;
    if (r == 0)
      break;
  }
  fclose(f);
  buf[n] = '\0';
  if (len)
    *len = n;
  return buf;
}

#endif
