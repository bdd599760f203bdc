/* intern.c: the interned-string table. Each string lives in one block
 * behind a small header (reference count, length); the table maps the
 * bytes to the block, borrowing the block's own copy as the key. */
#include "carpenter/intern.h"

#include <stdint.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/map.h"

struct istr {
  uint32_t refs;
  uint32_t len;
  char s[];
};

static struct carp_map table;
static size_t total_bytes;

static struct istr *header(const char *s)
{
  return (struct istr *)(s - offsetof(struct istr, s));
}

const char *carp_intern(const char *s, size_t len)
{
  struct istr *e = carp_map_get(&table, s, len);
  if (e) {
    e->refs++;
    return e->s;
  }
  e = carp_malloc(sizeof(*e) + len + 1);
  e->refs = 1;
  e->len = (uint32_t)len;
  memcpy(e->s, s, len);
  e->s[len] = '\0';
  carp_map_put(&table, e->s, len, e);
  total_bytes += sizeof(*e) + len + 1;
  return e->s;
}

const char *carp_interns(const char *s)
{
  return s ? carp_intern(s, strlen(s)) : NULL;
}

const char *carp_intern_ref(const char *interned)
{
  if (interned)
    header(interned)->refs++;
  return interned;
}

void carp_intern_release(const char *interned)
{
  struct istr *e;
  if (!interned)
    return;
  e = header(interned);
  if (--e->refs > 0)
    return;
  carp_map_del(&table, e->s, e->len);
  total_bytes -= sizeof(*e) + e->len + 1;
  carp_free(e);
  if (table.len == 0)
    carp_map_free(&table);
}

size_t carp_intern_len(const char *interned)
{
  return interned ? header(interned)->len : 0;
}

size_t carp_intern_count(void)
{
  return table.len;
}

size_t carp_intern_bytes(void)
{
  return total_bytes;
}
