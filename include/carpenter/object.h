/* Module api (internal/api). Cached Kubernetes objects: compact, immutable,
 * reference-counted.
 *
 * Each kind (pod, node, nodeclaim...) decodes the JSON of an object
 * straight into a small struct that starts with struct carp_objmeta and
 * keeps only what Carpenter reads. Strings that repeat across objects are
 * interned, and whole label, annotation and finalizer sets are interned
 * too, so the pods of one ReplicaSet share one label set.
 *
 * Objects never change once decoded: an update replaces the object. Code
 * that keeps one past the callback that handed it out takes a reference
 * (carp_obj_ref) and drops it later (carp_obj_unref). */
#ifndef CARP_OBJECT_H
#define CARP_OBJECT_H

#include <stddef.h>
#include <stdint.h>

#include <yajl/yajl_tree.h>

#include "carpenter/buf.h"
#include "carpenter/jdec.h"

struct carp_kv {
  const char *key;   /* interned */
  const char *value; /* interned ("" for finalizers) */
};

/* A set of key/value pairs sorted by key, interned as a whole. NULL is
 * the empty set. */
struct carp_kvset {
  uint32_t refs;
  uint32_t n;
  char *canon; /* the pairs as "k\0v\0k\0v\0...", the intern key */
  size_t canon_len;
  struct carp_kv kv[];
};

/* Builds an interned set from a JSON object of strings (labels,
 * annotations); keep, when not NULL, filters the keys. Non-string values
 * are an error. *out is NULL for an empty set. */
int carp_kvset_from_object(yajl_val obj, int (*keep)(const char *key),
                           const struct carp_kvset **out);
/* From a JSON array of strings (finalizers); values are "". */
int carp_kvset_from_array(yajl_val arr, const struct carp_kvset **out);

/* The same from parser events (include/carpenter/jdec.h): a handler hands
 * the value (an object of strings, or for an array decoder an array of
 * strings; null is the empty set) to carp_kvset_dec_value, and once the
 * value has ended carp_kvset_dec_finish interns the set. Nothing is
 * interned before: a set that is never finished costs nothing. */
struct carp_kvset_dec {
  int (*keep)(const char *key);
  int array;          /* an array of strings (finalizers) */
  int bad;            /* not a map (array) of strings */
  struct carp_buf kv; /* the pairs kept, "k\0v\0" each */
  size_t *at;         /* where each pair starts in kv */
  size_t n, cap;
};
void carp_kvset_dec_init(struct carp_kvset_dec *k, int array,
                         int (*keep)(const char *key));
void carp_kvset_dec_reset(struct carp_kvset_dec *k);
void carp_kvset_dec_free(struct carp_kvset_dec *k);
int carp_kvset_dec_value(struct carp_jdec *d, struct carp_kvset_dec *k,
                         const struct carp_jval *v);
/* 0 and the set (NULL when empty), or CARP_EPARSE. */
int carp_kvset_dec_finish(struct carp_kvset_dec *k,
                          const struct carp_kvset **out);
/* From pairs (any order; later duplicates win). */
const struct carp_kvset *carp_kvset_make(const struct carp_kv *kv, size_t n);
const struct carp_kvset *carp_kvset_ref(const struct carp_kvset *s);
void carp_kvset_release(const struct carp_kvset *s);
/* Value for key or NULL (binary search). */
const char *carp_kvset_get(const struct carp_kvset *s, const char *key);
int carp_kvset_has(const struct carp_kvset *s, const char *key);
size_t carp_kvset_len(const struct carp_kvset *s);
size_t carp_kvset_count(void); /* distinct sets alive */

/* The object's controller (or first) owner reference. */
struct carp_owner {
  const char *api_version; /* interned; NULL when there is no owner */
  const char *kind;        /* interned */
  const char *name;        /* interned */
  const char *uid;         /* interned: siblings share it */
  int controller;
};

struct carp_kind;

struct carp_objmeta {
  uint32_t refs;
  uint32_t store_mark; /* informer/store.c: the last list that had it */
  const struct carp_kind *kind;
  const char *namespace; /* interned; NULL for cluster-scoped objects */
  const char *key;       /* "namespace/name" or "name": the store key */
  const char *name;      /* key, name, uid, rv point into strings[] */
  const char *uid;
  const char *resource_version;
  int64_t generation;
  int64_t creation_ms; /* epoch ms */
  int64_t deletion_ms; /* epoch ms; 0 when not being deleted */
  const struct carp_kvset *labels;
  const struct carp_kvset *annotations; /* only keys the kind keeps */
  const struct carp_kvset *finalizers;
  struct carp_owner owner;
  char *strings; /* "[namespace/]name\0uid\0rv\0" */
  /* Bookkeeping of the store holding the object (informer/store.c). */
  uint32_t store_pos[2];
};

/* Decodes metadata from an object's JSON. keep_annotation, when not NULL,
 * selects the annotations kept. On error returns CARP_EPARSE with the
 * field in *err (free with carp_free). */
int carp_objmeta_decode(yajl_val obj, int (*keep_annotation)(const char *key),
                        struct carp_objmeta *m, char **err);
/* Releases what carp_objmeta_decode allocated. */
void carp_objmeta_cleanup(struct carp_objmeta *m);

/* Who an object says it is, NULL where it does not say (metadata.name,
 * .namespace, .uid, .resourceVersion as strings): what a message about an
 * object that cannot be decoded names, and what a deletion needs. */
struct carp_obj_id {
  const char *name;
  const char *namespace;
  const char *uid;
  const char *resource_version;
};

/* Metadata from parser events: the object's handler gives the value of its
 * "metadata" member (the first) to carp_objmeta_dec_value; once the object
 * has ended, carp_objmeta_dec_finish does what carp_objmeta_decode does
 * (the same checks, in the same order, so the same first error). */
struct carp_objmeta_dec {
  int (*keep_annotation)(const char *key);
  int present;           /* metadata was an object */
  struct carp_buf strs;  /* the strings below, NUL-terminated */
  size_t at[4];          /* name, namespace, uid, resourceVersion; */
  unsigned have;         /*   bit i: at[i] is set */
  int gen_seen, gen_bad; /* generation */
  int64_t gen;
  int created_bad, deleted_bad;
  int64_t created_ms, deleted_ms;
  struct carp_kvset_dec labels, annotations, finalizers;
  struct carp_buf owners; /* owner candidates: see object.c */
  size_t owner_at[2][4];  /* [first, controller][apiVersion..uid] */
  unsigned owner_have[2];
  int owner_ctl;       /* a controller reference was found */
  int owner_cur_ctl;   /* the reference being read says controller */
  int owner_cur_first; /* it is the first */
  size_t owner_cur[4];
  unsigned owner_cur_have;
};
void carp_objmeta_dec_init(struct carp_objmeta_dec *md,
                           int (*keep_annotation)(const char *key));
void carp_objmeta_dec_free(struct carp_objmeta_dec *md);
/* Before each object. */
void carp_objmeta_dec_reset(struct carp_objmeta_dec *md);
int carp_objmeta_dec_value(struct carp_jdec *d, struct carp_objmeta_dec *md,
                           const struct carp_jval *v);
int carp_objmeta_dec_finish(struct carp_objmeta_dec *md, struct carp_objmeta *m,
                            char **err);
/* Valid until the next reset. */
void carp_objmeta_dec_id(const struct carp_objmeta_dec *md,
                         struct carp_obj_id *id);

/* Decoding a kind from parser events. The state (state_new) starts with a
 * struct carp_objmeta_dec. The handler of the object (keys: the table its
 * members are looked up in) gets the object's members and CARP_JEND, as
 * any jdec handler; begin comes first, and finish once the object has
 * ended: the object, or CARP_EPARSE and *err. A value that is not an
 * object is one too: begin, then finish (which fails on it). */
struct carp_kind_stream {
  const char *const *keys;
  void *(*state_new)(void);
  void (*state_free)(void *state);
  void (*begin)(void *state);
  carp_jdec_fn member;
  int (*finish)(void *state, struct carp_objmeta **out, char **err);
};

/* A kind: how to decode, free and describe objects of one resource. */
struct carp_kind {
  const char *name;     /* "Pod" */
  const char *group;    /* "" for core */
  const char *version;  /* "v1" */
  const char *resource; /* "pods" */
  int namespaced;
  /* Decodes one object; on error returns CARP_EPARSE and *err. */
  int (*decode)(yajl_val obj, struct carp_objmeta **out, char **err);
  void (*free)(struct carp_objmeta *obj);
  /* Optional: decoding from parser events, without a tree (the informer
   * builds a tree for kinds without). Its decode is then usually
   * carp_kind_decode_tree. */
  const struct carp_kind_stream *stream;
};

/* decode for a kind with a stream: the tree's events through it. */
int carp_kind_decode_tree(const struct carp_kind *kind, yajl_val obj,
                          struct carp_objmeta **out, char **err);

struct carp_objmeta *carp_obj_ref(struct carp_objmeta *m);
void carp_obj_unref(struct carp_objmeta *m);

/* Parses a Kubernetes timestamp field (RFC 3339) at path, 0 when absent. */
int carp_json_time(yajl_val v, int64_t *epoch_ms, const char *field);

#endif
