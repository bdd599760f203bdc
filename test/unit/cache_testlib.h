/* Filling the informer caches by hand, for unit tests of the controllers'
 * pure parts (the informers are never started, so no handler runs): JSON
 * text decoded with a kind (a decode error fails the test) and put into an
 * informer's store. Include once per test file, after cmocka.h. */
#ifndef CARP_TEST_CACHE_TESTLIB_H
#define CARP_TEST_CACHE_TESTLIB_H

#include <stdio.h>
#include <string.h>

#include "carpenter/informer.h"
#include "carpenter/json.h"
#include "carpenter/object.h"

static __attribute__((unused)) struct carp_objmeta *
cache_decode(const struct carp_kind *kind, const char *json)
{
  yajl_val v = NULL;
  struct carp_objmeta *m = NULL;
  char *err = NULL;
  if (carp_json_parse(json, strlen(json), &v, &err) ||
      kind->decode(v, &m, &err)) {
    fprintf(stderr, "decode: %s\n%s\n", err ? err : "?", json);
    fail();
  }
  carp_json_free(v);
  return m;
}

static __attribute__((unused)) void cache_put(struct carp_informer *inf,
                                              const struct carp_kind *kind,
                                              const char *json)
{
  struct carp_objmeta *old =
      carp_store_put(carp_informer_store(inf), cache_decode(kind, json));
  if (old)
    carp_obj_unref(old);
}

#endif
