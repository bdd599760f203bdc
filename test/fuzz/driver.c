/* driver.c: runs a fuzz target without libFuzzer (any compiler, the
 * normal and sanitizer builds): every file of the corpus directories
 * first, then, for the seconds given, inputs made from them by random
 * edits - bytes flipped, inserted, dropped, ranges repeated and spliced
 * in from another input. Slower to find things than libFuzzer's guided
 * search (hack/fuzz.sh), but it needs nothing and runs in ctest.
 *
 *   fuzz_x [-t seconds] [-s seed] DIR...
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "carpenter/alloc.h"
#include "fuzz.h"

struct input {
  uint8_t *data;
  size_t len;
};

static struct input *inputs;
static size_t ninputs;
static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next(void)
{
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static size_t below(size_t n)
{
  return n ? (size_t)(next() % n) : 0;
}

static void load(const char *path)
{
  FILE *f = fopen(path, "rb");
  long n;
  struct input in;
  if (!f)
    return;
  if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
    fclose(f);
    return;
  }
  in.len = (size_t)n;
  in.data = carp_malloc(in.len + 1);
  if (fread(in.data, 1, in.len, f) != in.len) {
    carp_free(in.data);
    fclose(f);
    return;
  }
  fclose(f);
  inputs = carp_reallocarray(inputs, ninputs + 1, sizeof(*inputs));
  inputs[ninputs++] = in;
}

static void load_dir(const char *dir)
{
  DIR *d = opendir(dir);
  struct dirent *e;
  char path[4096];
  if (!d) {
    fprintf(stderr, "cannot open %s\n", dir);
    exit(2);
  }
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.')
      continue;
    snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
    load(path);
  }
  closedir(d);
}

/* A copy of a random input with a few random edits, in buf (cap bytes). */
static size_t mutate(uint8_t *buf, size_t cap)
{
  const struct input *in = &inputs[below(ninputs)];
  size_t len = in->len < cap ? in->len : cap, edits = 1 + below(8), i;
  memcpy(buf, in->data, len);
  for (i = 0; i < edits; i++) {
    size_t at = below(len + 1), n;
    const struct input *o;
    switch (below(6)) {
    case 0: /* a byte flipped */
      if (len)
        buf[below(len)] ^= (uint8_t)(1u << below(8));
      break;
    case 1: /* a byte set: JSON's and YAML's punctuation mostly */
      if (len)
        buf[below(len)] = (uint8_t) "{}[]:,\"\\ \n-0e.#&*!|>'"[below(22)];
      break;
    case 2: /* a byte inserted */
      if (len < cap) {
        memmove(buf + at + 1, buf + at, len - at);
        buf[at] = (uint8_t)next();
        len++;
      }
      break;
    case 3: /* a range dropped */
      n = below(len - (at < len ? at : len) + 1);
      if (at < len) {
        memmove(buf + at, buf + at + n, len - at - n);
        len -= n;
      }
      break;
    case 4: /* a range repeated (deeper nesting, longer lists) */
      if (at < len) {
        n = below(len - at) + 1;
        if (len + n <= cap) {
          memmove(buf + at + n, buf + at, len - at);
          len += n;
        }
      }
      break;
    default: /* a piece of another input spliced in */
      o = &inputs[below(ninputs)];
      if (o->len) {
        size_t from = below(o->len);
        n = below(o->len - from) + 1;
        if (len + n <= cap) {
          memmove(buf + at + n, buf + at, len - at);
          memcpy(buf + at, o->data + from, n);
          len += n;
        }
      }
      break;
    }
  }
  return len;
}

static double now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
  double seconds = 2, end;
  size_t i, runs = 0, cap = 1 << 20;
  uint8_t *buf;
  int a;
  for (a = 1; a < argc; a++) {
    if (!strcmp(argv[a], "-t") && a + 1 < argc)
      seconds = strtod(argv[++a], NULL);
    else if (!strcmp(argv[a], "-s") && a + 1 < argc)
      rng = strtoull(argv[++a], NULL, 0) | 1;
    else
      load_dir(argv[a]);
  }
  if (!ninputs) {
    fprintf(stderr, "usage: %s [-t seconds] [-s seed] DIR... (no inputs)\n",
            argv[0]);
    return 2;
  }
  for (i = 0; i < ninputs; i++)
    LLVMFuzzerTestOneInput(inputs[i].data, inputs[i].len);
  buf = carp_malloc(cap);
  end = now() + seconds;
  while (now() < end) {
    size_t len = mutate(buf, cap);
    uint8_t *exact = carp_malloc(len ? len : 1); /* overreads hit its end */
    memcpy(exact, buf, len);
    LLVMFuzzerTestOneInput(exact, len);
    carp_free(exact);
    runs++;
  }
  printf("%zu corpus inputs, %zu mutated runs\n", ninputs, runs);
  for (i = 0; i < ninputs; i++)
    carp_free(inputs[i].data);
  carp_free(inputs);
  carp_free(buf);
  return 0;
}
