/* yaml.c: libyaml's event parser turned into a small tree.
 *
 * The builder keeps a stack of open collections; each event adds a node to
 * the innermost one. Mapping keys must be scalars (every file Carpenter
 * reads is like that); anything else is refused with its position. */
#include "carpenter/yaml.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <yaml.h>

#include "carpenter/alloc.h"
#include "carpenter/buf.h"
#include "carpenter/error.h"

#define MAX_DEPTH 64
#define MAX_FILE  (4 * 1024 * 1024)

struct anchor {
  char *name;
  struct carp_yaml_node *node;
};

struct builder {
  struct carp_yaml_doc *doc;
  struct carp_yaml_node *stack[MAX_DEPTH];
  char *pending_key[MAX_DEPTH]; /* mapping: key waiting for its value */
  size_t depth;
  struct anchor *anchors;
  size_t nanchors;
  char **err;
};

static int fail(struct builder *b, size_t line, size_t col, const char *what)
{
  if (b->err) {
    struct carp_buf m;
    carp_buf_init(&m, 1024);
    carp_buf_printf(&m, "%s:%zu:%zu: %s", b->doc->source, line, col, what);
    *b->err = carp_buf_steal(&m, NULL);
  }
  return CARP_EPARSE;
}

static struct carp_yaml_node *
new_node(struct builder *b, enum carp_yaml_type type, const yaml_mark_t *mark)
{
  struct carp_yaml_node *n = CARP_NEW(struct carp_yaml_node);
  struct carp_yaml_doc *d = b->doc;
  n->type = type;
  n->line = mark->line + 1;
  n->col = mark->column + 1;
  d->all = carp_reallocarray(d->all, d->nall + 1, sizeof(*d->all));
  d->all[d->nall++] = n;
  return n;
}

static void remember_anchor(struct builder *b, const yaml_char_t *name,
                            struct carp_yaml_node *n)
{
  if (!name)
    return;
  b->anchors =
      carp_reallocarray(b->anchors, b->nanchors + 1, sizeof(*b->anchors));
  b->anchors[b->nanchors].name = carp_strdup((const char *)name);
  b->anchors[b->nanchors].node = n;
  b->nanchors++;
}

static void push_item(struct carp_yaml_node *parent, char *key,
                      struct carp_yaml_node *n)
{
  parent->items =
      carp_reallocarray(parent->items, parent->len + 1, sizeof(*parent->items));
  if (parent->type == CARP_YAML_MAPPING) {
    parent->keys =
        carp_reallocarray(parent->keys, parent->len + 1, sizeof(char *));
    parent->keys[parent->len] = key;
  }
  parent->items[parent->len++] = n;
}

/* Adds a finished node to the open collection (or makes it the root).
 * For a mapping awaiting a key, a scalar becomes the key. */
static int attach(struct builder *b, struct carp_yaml_node *n,
                  const yaml_mark_t *mark)
{
  struct carp_yaml_node *parent;
  if (b->depth == 0) {
    if (!b->doc->root)
      b->doc->root = n;
    return 0;
  }
  parent = b->stack[b->depth - 1];
  if (parent->type == CARP_YAML_SEQUENCE) {
    push_item(parent, NULL, n);
    return 0;
  }
  if (!b->pending_key[b->depth - 1]) {
    if (n->type != CARP_YAML_SCALAR)
      return fail(b, mark->line + 1, mark->column + 1,
                  "mapping keys must be plain values");
    b->pending_key[b->depth - 1] = carp_strdup(n->scalar);
    return 0;
  }
  push_item(parent, b->pending_key[b->depth - 1], n);
  b->pending_key[b->depth - 1] = NULL;
  return 0;
}

static int handle(struct builder *b, yaml_event_t *e)
{
  struct carp_yaml_node *n;
  size_t i;
  switch (e->type) {
  case YAML_SCALAR_EVENT:
    n = new_node(b, CARP_YAML_SCALAR, &e->start_mark);
    n->scalar =
        carp_strndup((const char *)e->data.scalar.value, e->data.scalar.length);
    n->scalar_len = e->data.scalar.length;
    n->plain = e->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
    remember_anchor(b, e->data.scalar.anchor, n);
    return attach(b, n, &e->start_mark);
  case YAML_SEQUENCE_START_EVENT:
  case YAML_MAPPING_START_EVENT:
    if (b->depth == MAX_DEPTH)
      return fail(b, e->start_mark.line + 1, e->start_mark.column + 1,
                  "nesting too deep");
    n = new_node(b,
                 e->type == YAML_SEQUENCE_START_EVENT ? CARP_YAML_SEQUENCE
                                                      : CARP_YAML_MAPPING,
                 &e->start_mark);
    remember_anchor(b,
                    e->type == YAML_SEQUENCE_START_EVENT
                        ? e->data.sequence_start.anchor
                        : e->data.mapping_start.anchor,
                    n);
    if (attach(b, n, &e->start_mark))
      return CARP_EPARSE;
    b->stack[b->depth] = n;
    b->pending_key[b->depth] = NULL;
    b->depth++;
    return 0;
  case YAML_SEQUENCE_END_EVENT:
  case YAML_MAPPING_END_EVENT:
    b->depth--;
    CARP_FREE(&b->pending_key[b->depth]);
    return 0;
  case YAML_ALIAS_EVENT:
    for (i = b->nanchors; i > 0; i--) {
      if (strcmp(b->anchors[i - 1].name, (const char *)e->data.alias.anchor) ==
          0) {
        if (b->anchors[i - 1].node->type != CARP_YAML_SCALAR && b->depth > 0 &&
            b->stack[b->depth - 1]->type == CARP_YAML_MAPPING &&
            !b->pending_key[b->depth - 1])
          return fail(b, e->start_mark.line + 1, e->start_mark.column + 1,
                      "mapping keys must be plain values");
        return attach(b, b->anchors[i - 1].node, &e->start_mark);
      }
    }
    return fail(b, e->start_mark.line + 1, e->start_mark.column + 1,
                "unknown alias");
  default:
    return 0;
  }
}

int carp_yaml_load(const char *text, size_t len, const char *source,
                   struct carp_yaml_doc *doc, char **err)
{
  yaml_parser_t parser;
  yaml_event_t event;
  struct builder b;
  int rc = 0, done = 0;
  size_t i;

  memset(doc, 0, sizeof(*doc));
  memset(&b, 0, sizeof(b));
  doc->source = carp_strdup(source ? source : "<input>");
  b.doc = doc;
  b.err = err;
  if (err)
    *err = NULL;
  if (!yaml_parser_initialize(&parser))
    return CARP_ENOMEM;
  yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
  while (!done && !rc) {
    if (!yaml_parser_parse(&parser, &event)) {
      char what[256];
      snprintf(what, sizeof(what), "%s",
               parser.problem ? parser.problem : "invalid YAML");
      rc = fail(&b, parser.problem_mark.line + 1,
                parser.problem_mark.column + 1, what);
      break;
    }
    /* Only the first document counts. */
    if (event.type == YAML_DOCUMENT_END_EVENT ||
        event.type == YAML_STREAM_END_EVENT)
      done = 1;
    else
      rc = handle(&b, &event);
    yaml_event_delete(&event);
  }
  yaml_parser_delete(&parser);
  for (i = 0; i < b.depth; i++)
    carp_free(b.pending_key[i]);
  for (i = 0; i < b.nanchors; i++)
    carp_free(b.anchors[i].name);
  carp_free(b.anchors);
  if (rc)
    carp_yaml_free(doc);
  return rc;
}

int carp_yaml_load_file(const char *path, struct carp_yaml_doc *doc, char **err)
{
  struct carp_buf data;
  char chunk[8192];
  size_t n;
  int rc = 0;
  FILE *f = fopen(path, "rb");

  memset(doc, 0, sizeof(*doc));
  if (!f) {
    rc = -errno;
    if (err) {
      struct carp_buf m;
      carp_buf_init(&m, 1024);
      carp_buf_printf(&m, "%s: %s", path, carp_strerror(rc));
      *err = carp_buf_steal(&m, NULL);
    }
    return rc;
  }
  carp_buf_init(&data, MAX_FILE);
  while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
    if (carp_buf_append(&data, chunk, n)) {
      rc = CARP_ETOOBIG;
      break;
    }
  }
  fclose(f);
  if (rc) {
    if (err) {
      struct carp_buf m;
      carp_buf_init(&m, 1024);
      carp_buf_printf(&m, "%s: file larger than %d bytes", path, MAX_FILE);
      *err = carp_buf_steal(&m, NULL);
    }
    carp_buf_free(&data);
    return rc;
  }
  rc = carp_yaml_load(carp_buf_cstr(&data), data.len, path, doc, err);
  carp_buf_free(&data);
  return rc;
}

void carp_yaml_free(struct carp_yaml_doc *doc)
{
  size_t i, j;
  for (i = 0; i < doc->nall; i++) {
    struct carp_yaml_node *n = doc->all[i];
    for (j = 0; n->keys && j < n->len; j++)
      carp_free(n->keys[j]);
    carp_free(n->keys);
    carp_free(n->items);
    carp_free(n->scalar);
    carp_free(n);
  }
  carp_free(doc->all);
  carp_free(doc->source);
  memset(doc, 0, sizeof(*doc));
}

struct carp_yaml_node *carp_yaml_get(const struct carp_yaml_node *map,
                                     const char *key)
{
  size_t i;
  if (!map || map->type != CARP_YAML_MAPPING)
    return NULL;
  for (i = 0; i < map->len; i++)
    if (strcmp(map->keys[i], key) == 0)
      return map->items[i];
  return NULL;
}

int carp_yaml_is_null(const struct carp_yaml_node *n)
{
  if (!n)
    return 1;
  if (n->type != CARP_YAML_SCALAR || !n->plain)
    return 0;
  return n->scalar_len == 0 || !strcmp(n->scalar, "~") ||
         !strcasecmp(n->scalar, "null");
}

const char *carp_yaml_str(const struct carp_yaml_node *n)
{
  if (!n || n->type != CARP_YAML_SCALAR || carp_yaml_is_null(n))
    return NULL;
  return n->scalar;
}

int carp_yaml_bool(const struct carp_yaml_node *n, int *out)
{
  static const char *const yes[] = {"true", "yes", "on"};
  static const char *const no[] = {"false", "no", "off"};
  size_t i;
  const char *s = carp_yaml_str(n);
  if (!s)
    return CARP_EINVAL;
  for (i = 0; i < 3; i++) {
    if (!strcasecmp(s, yes[i])) {
      *out = 1;
      return 0;
    }
    if (!strcasecmp(s, no[i])) {
      *out = 0;
      return 0;
    }
  }
  return CARP_EINVAL;
}
