/* readyaml.c: a YAML snapshot through libyaml's event parser into tree
 * events (tree.c), documents one after the other. Scalars are read
 * as kubectl reads a manifest (carp_yaml_scalar_resolve: the YAML 1.2 core
 * schema); aliases are refused (kubectl never writes them). */
#include <stdio.h>
#include <string.h>

#include <yaml.h>

#include "carpenter/buf.h"
#include "carpenter/error.h"
#include "carpenter/yaml.h"
#include "sim_int.h"

static int expecting_key(const struct sim_tree *t)
{
  const struct carp_jtree_frame *f =
      t->jt.depth ? &t->jt.stack[t->jt.depth - 1] : NULL;
  return f && f->v->type == yajl_t_object && !f->key;
}

static int scalar(struct sim_tree *t, const yaml_event_t *e,
                  struct carp_buf *num)
{
  const char *s = (const char *)e->data.scalar.value;
  size_t len = e->data.scalar.length;
  const char *tag = (const char *)e->data.scalar.tag;
  int plain = e->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
              !(tag && !strcmp(tag, YAML_STR_TAG));
  if (expecting_key(t))
    return sim_tree_key(t, s, len);
  carp_buf_reset(num);
  switch (carp_yaml_scalar_resolve(s, len, plain, num)) {
  case CARP_YAML_NULL:
    return sim_tree_null(t);
  case CARP_YAML_TRUE:
    return sim_tree_bool(t, 1);
  case CARP_YAML_FALSE:
    return sim_tree_bool(t, 0);
  case CARP_YAML_NUMBER:
    return sim_tree_number(t, num->ptr, num->len);
  case CARP_YAML_STRING:
    break;
  }
  return sim_tree_string(t, s, len);
}

int sim_read_yaml(struct sim_tree *t, const char *text, size_t len, char *err,
                  size_t errsz)
{
  struct carp_buf num;
  yaml_parser_t parser;
  yaml_event_t e;
  int rc = 0, done = 0;

  if (!yaml_parser_initialize(&parser))
    return CARP_ENOMEM;
  yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
  carp_buf_init(&num, CARP_BUF_UNLIMITED);
  while (!done && !rc) {
    if (!yaml_parser_parse(&parser, &e)) {
      snprintf(err, errsz, "%s:%zu:%zu: invalid YAML: %s%s%s", t->where.file,
               parser.problem_mark.line + 1, parser.problem_mark.column + 1,
               parser.problem ? parser.problem : "syntax error",
               parser.context ? " " : "", parser.context ? parser.context : "");
      rc = CARP_EPARSE;
      break;
    }
    t->line = e.start_mark.line + 1;
    switch (e.type) {
    case YAML_SCALAR_EVENT:
      rc = scalar(t, &e, &num);
      break;
    case YAML_MAPPING_START_EVENT:
    case YAML_SEQUENCE_START_EVENT:
      if (expecting_key(t)) {
        snprintf(t->err, sizeof(t->err), "mapping keys must be plain values");
        rc = CARP_EPARSE;
      } else {
        rc = e.type == YAML_MAPPING_START_EVENT ? sim_tree_start_map(t)
                                                : sim_tree_start_array(t);
      }
      break;
    case YAML_MAPPING_END_EVENT:
    case YAML_SEQUENCE_END_EVENT:
      rc = sim_tree_end(t);
      break;
    case YAML_ALIAS_EVENT:
      snprintf(t->err, sizeof(t->err),
               "aliases (*%s) are not read in snapshots",
               (const char *)e.data.alias.anchor);
      rc = CARP_EPARSE;
      break;
    case YAML_STREAM_END_EVENT:
      done = 1;
      break;
    default:
      break;
    }
    if (rc == CARP_EPARSE && t->err[0])
      snprintf(err, errsz, "%s:%zu:%zu: %s", t->where.file,
               e.start_mark.line + 1, e.start_mark.column + 1, t->err);
    yaml_event_delete(&e);
  }
  yaml_parser_delete(&parser);
  carp_buf_free(&num);
  return rc;
}
