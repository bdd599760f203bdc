/* Unit tests for the informer store: put, replace, remove, iteration, and
 * that an index follows an object as its value changes (a pod moving from
 * unbound to a node). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "carpenter/api.h"
#include "carpenter/intern.h"
#include "carpenter/json.h"
#include "carpenter/store.h"

static struct carp_objmeta *pod(const char *name, const char *node)
{
  char text[512];
  yajl_val v;
  struct carp_objmeta *m;
  snprintf(text, sizeof(text),
           "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\"},"
           "\"spec\":{%s%s%s}}",
           name, node ? "\"nodeName\":\"" : "", node ? node : "",
           node ? "\"" : "");
  assert_int_equal(carp_json_parse(text, strlen(text), &v, NULL), 0);
  assert_int_equal(carp_kind_pod.decode(v, &m, NULL), 0);
  carp_json_free(v);
  return m;
}

static const char *by_node(const struct carp_objmeta *m)
{
  return ((const struct carp_pod *)m)->node_name;
}

static void test_store(void **state)
{
  size_t strings = carp_intern_count();
  struct carp_store *s = carp_store_new(&carp_kind_pod);
  struct carp_store_iter it;
  struct carp_objmeta *const *objs;
  struct carp_objmeta *old;
  size_t n, count = 0;
  char name[16];

  assert_int_equal(carp_store_add_index(s, by_node), 0);
  for (int i = 0; i < 100; i++) {
    snprintf(name, sizeof(name), "p%d", i);
    assert_null(carp_store_put(s, pod(name, i % 2 ? "n1" : NULL)));
  }
  assert_int_equal(carp_store_len(s), 100);
  objs = carp_store_by_index(s, 0, "n1", &n);
  assert_int_equal(n, 50);
  for (size_t i = 0; i < n; i++)
    assert_string_equal(by_node(objs[i]), "n1");
  assert_null(carp_store_by_index(s, 0, "n2", &n));
  assert_int_equal(n, 0);

  /* p0 gets bound to n2: it leaves no bucket and joins n2's. */
  old = carp_store_put(s, pod("p0", "n2"));
  assert_non_null(old);
  assert_null(by_node(old));
  carp_obj_unref(old);
  objs = carp_store_by_index(s, 0, "n2", &n);
  assert_int_equal(n, 1);
  assert_string_equal(objs[0]->name, "p0");
  /* p1 moves from n1 to n2. */
  carp_obj_unref(carp_store_put(s, pod("p1", "n2")));
  carp_store_by_index(s, 0, "n1", &n);
  assert_int_equal(n, 49);
  carp_store_by_index(s, 0, "n2", &n);
  assert_int_equal(n, 2);
  /* Remove everything on n1. */
  for (int i = 3; i < 100; i += 2) {
    snprintf(name, sizeof(name), "ns/p%d", i);
    old = carp_store_remove(s, name);
    assert_non_null(old);
    carp_obj_unref(old);
  }
  assert_null(carp_store_by_index(s, 0, "n1", &n));
  assert_null(carp_store_remove(s, "ns/p3"));
  assert_non_null(carp_store_get(s, "ns/p0"));
  assert_null(carp_store_get(s, "other/p0"));
  carp_store_iter_init(&it);
  while (carp_store_next(s, &it))
    count++;
  assert_int_equal(count, carp_store_len(s));
  assert_int_equal(count, 51);
  carp_store_free(s);
  assert_int_equal(carp_intern_count(), strings);
  assert_int_equal(carp_podspec_count(), 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_store),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
