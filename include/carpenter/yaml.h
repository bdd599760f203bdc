/* Module yaml (internal/yaml). YAML documents (kubeconfig, --pve-config) loaded
 * with libyaml into a small tree whose nodes remember their line and column, so
 * every error can say exactly where the problem is ("pve.yaml:7:12: tokenID:
 * must be a string"). Aliases are resolved to the anchored node. */
#ifndef CARP_YAML_H
#define CARP_YAML_H

#include <stddef.h>

enum carp_yaml_type {
  CARP_YAML_SCALAR = 0,
  CARP_YAML_MAPPING,
  CARP_YAML_SEQUENCE,
};

struct carp_yaml_node {
  enum carp_yaml_type type;
  char *scalar; /* SCALAR: the text, NUL-terminated */
  size_t scalar_len;
  int plain;   /* SCALAR: unquoted (so "null", "~" and "" mean null) */
  char **keys; /* MAPPING: keys (scalar keys only) */
  struct carp_yaml_node **items; /* MAPPING values or SEQUENCE items */
  size_t len;
  size_t line; /* 1-based */
  size_t col;  /* 1-based */
};

struct carp_yaml_doc {
  struct carp_yaml_node *root; /* NULL for an empty document */
  char *source;                /* file name, for messages */
  struct carp_yaml_node **all; /* every node, for freeing */
  size_t nall;
};

/* Loads the first document of a file or buffer. On failure returns
 * CARP_EPARSE (or a negative errno for the file) and an error message
 * "file:line:col: problem" in *err (free with carp_free). */
int carp_yaml_load_file(const char *path, struct carp_yaml_doc *doc,
                        char **err);
int carp_yaml_load(const char *text, size_t len, const char *source,
                   struct carp_yaml_doc *doc, char **err);
void carp_yaml_free(struct carp_yaml_doc *doc);

/* The value of key in a mapping, or NULL. */
struct carp_yaml_node *carp_yaml_get(const struct carp_yaml_node *map,
                                     const char *key);
/* 1 when n is absent or a null scalar. */
int carp_yaml_is_null(const struct carp_yaml_node *n);
/* Scalar text, or NULL when n is not a (non-null) scalar. */
const char *carp_yaml_str(const struct carp_yaml_node *n);
/* Scalar booleans (true/false/yes/no/on/off, any case). */
int carp_yaml_bool(const struct carp_yaml_node *n, int *out);

/* The tree from n down as JSON, as kubectl converts a manifest: plain
 * scalars resolved with the YAML 1.2 core schema (null, true/false,
 * integers incl. 0o/0x, floats), quoted and block scalars as strings; what
 * JSON cannot hold (.inf, .nan) stays a string. A NULL n is JSON null.
 * carp_yaml_to_json gives a yajl tree (free with carp_json_free); on
 * error CARP_EPARSE and a message in *err. The _text form appends to out. */
struct carp_buf;
typedef struct yajl_val_s *yajl_val;
int carp_yaml_to_json(const struct carp_yaml_node *n, yajl_val *out,
                      char **err);
int carp_yaml_to_json_text(const struct carp_yaml_node *n,
                           struct carp_buf *out);

/* How one scalar reads as JSON under the rules above (s NUL-terminated at
 * len; plain: written without quotes). For a number its JSON text is
 * appended to num. */
enum carp_yaml_scalar {
  CARP_YAML_NULL = 0,
  CARP_YAML_TRUE,
  CARP_YAML_FALSE,
  CARP_YAML_NUMBER,
  CARP_YAML_STRING,
};
enum carp_yaml_scalar carp_yaml_scalar_resolve(const char *s, size_t len,
                                               int plain, struct carp_buf *num);

#endif
