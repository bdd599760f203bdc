/* Module json (internal/json). Decoding JSON from parser events, without a tree
 * (after SAX and yajl's own callbacks): a document's values are handed to
 * handlers as yajl's event parser (yajl_parse) meets them, so an object goes
 * straight into the struct that keeps it and everything else is skipped as it
 * passes.
 *
 * A handler gets the values of one container: each member of an object
 * (carp_jdec_field() says which, by its place in the key table the
 * container was entered with) or each element of an array, then
 * CARP_JEND. A value that is itself a container is skipped unless the
 * handler enters it (carp_jdec_enter), giving the handler and context
 * its values go to. Keys follow lookups in a tree: only the first member
 * of a name counts, a repeat is -1.
 *
 *   static int on_meta(struct carp_jdec *d, void *ctx,
 *                      const struct carp_jval *v)
 *   {
 *     if (carp_jdec_field(d) == NAME && v->type == CARP_JSTRING)
 *       ...v->s...
 *     return 0;
 *   }
 *
 * The same handlers run over a tree already parsed (carp_jdec_replay),
 * so a decoder written this way also serves callers holding a yajl_val.
 * Strings are handed over as C code sees them in a tree: NUL-terminated,
 * cut at the first NUL a \u0000 escape put there. */
#ifndef CARP_JDEC_H
#define CARP_JDEC_H

#include <stddef.h>
#include <stdint.h>

#include <yajl/yajl_parse.h>
#include <yajl/yajl_tree.h>

#include "carpenter/buf.h"

/* Containers entered at once, at most: deeper values can only be skipped
 * (carp_jdec_enter fails). Decoders enter a handful of levels; values
 * copied whole (carp_jdec_copy_fn, trees) are held to this too. */
#define CARP_JDEC_MAX_DEPTH 128

enum carp_jtype {
  CARP_JNULL = 0,
  CARP_JFALSE,
  CARP_JTRUE,
  CARP_JNUMBER, /* s: the number as written */
  CARP_JSTRING, /* s: the string, NUL-terminated */
  CARP_JOBJECT, /* an object starts */
  CARP_JARRAY,  /* an array starts */
  CARP_JEND,    /* the container the handler was entered with has ended */
};

struct carp_jval {
  enum carp_jtype type;
  const char *s; /* numbers and strings; valid during the call */
  size_t len;
};

struct carp_jdec;

/* Returns 0, or a negative code that stops the whole parse. */
typedef int (*carp_jdec_fn)(struct carp_jdec *d, void *ctx,
                            const struct carp_jval *v);

struct carp_jframe {
  carp_jdec_fn fn;
  void *ctx;
  const char *const *keys; /* NULL-terminated, at most 64 */
  uint64_t seen;           /* keys met so far */
  int field;               /* the current member's key in keys, or -1 */
  size_t index;            /* the current element (arrays) or member */
  int array;
  int pass_over; /* an object under carp_jdec_pass_over's parent name */
};

struct carp_jdec {
  struct carp_jframe stack[CARP_JDEC_MAX_DEPTH + 1]; /* [0]: the root */
  int depth;              /* frames entered (0: the root value is next) */
  size_t skip;            /* inside a skipped container: its nesting */
  int entered;            /* the handler entered the container just begun */
  int rc;                 /* a handler's code that stopped the parse */
  struct carp_jcopy *raw; /* a copy that goes on past the frames, as the
                             skipped container it is in passes */
  struct carp_buf key;    /* the parser's keys, copied (NUL-terminated) */
  const char *kp;         /* the current member's key: key.ptr, or a
                             replayed tree's own string */
  size_t kn;
  struct carp_buf text; /* the current scalar */
  yajl_handle yajl;
  char *over; /* ,"key": of carp_jdec_pass_over, or NULL */
  size_t over_len;
  char *parent;    /* the name of the member whose objects it applies in */
  size_t passed;   /* members passed over so far */
  int after_value; /* the parser's last event ended a value */
};

/* Values at the top go to root (the document's one value; a replay's). */
void carp_jdec_init(struct carp_jdec *d, carp_jdec_fn root, void *ctx);
/* The handler of the next top value (between documents). */
void carp_jdec_root(struct carp_jdec *d, carp_jdec_fn root, void *ctx);
void carp_jdec_free(struct carp_jdec *d);

/* Parses len bytes of JSON (comments allowed, as carp_json_parse does).
 * Returns 0; a handler's negative code; or CARP_EPARSE when the text is
 * not JSON, with a short message in *err when err is not NULL (free with
 * carp_free; it never quotes the input). A decoder may be used for one
 * document after another. */
int carp_jdec_parse(struct carp_jdec *d, const char *text, size_t len,
                    char **err);
/* Members named key of an object that is the value of a member named
 * parent (managedFields of metadata) are read by none of the decoder's
 * handlers (nor copied by them): carp_jdec_parse may pass over one with a
 * byte scan instead of the parser when it is sure that it is a member that
 * the parser would accept whole (its value validated as strictly);
 * otherwise the parser reads it and the handlers see it as before. Other
 * members of that name (a label called managedFields) are read as ever.
 * metadata.managedFields is a quarter to a half of an object's bytes. Both
 * names are plain ASCII without quotes or backslashes. */
void carp_jdec_pass_over(struct carp_jdec *d, const char *parent,
                         const char *key);

/* Hands a parsed tree (v NULL: nothing) to the handlers: the value goes to
 * the current handler, as if it came next from the parser. Returns 0 or a
 * handler's code. Usable inside a handler too, to feed a subtree. */
int carp_jdec_replay(struct carp_jdec *d, yajl_val v);
/* The same on a decoder of its own: v's events to root. */
int carp_jdec_tree(yajl_val v, carp_jdec_fn root, void *ctx);

/* In a handler, for a container value: its values go to fn with ctx.
 * Returns 0, or CARP_ETOOBIG past CARP_JDEC_MAX_DEPTH (it is skipped). */
int carp_jdec_enter(struct carp_jdec *d, carp_jdec_fn fn, void *ctx,
                    const char *const *keys);
/* The current member's index in the key table of its object, or -1 (not
 * in the table, a repeat, or an array element). */
int carp_jdec_field(const struct carp_jdec *d);
/* The current member's key ("" for an array element), NUL-terminated. */
const char *carp_jdec_key(const struct carp_jdec *d, size_t *len);
/* The current element's (member's) 0-based position in its container. */
size_t carp_jdec_index(const struct carp_jdec *d);
/* Whether the value belongs to an array (not an object). */
int carp_jdec_in_array(const struct carp_jdec *d);

/* Typed readings of a scalar, with the rules of carp_json_int and
 * carp_json_bool: an integer is a JSON integer or a numeric string; a
 * boolean is true/false or 0/1 (as an integer or a string). 0 or
 * CARP_EPARSE. */
int carp_jval_int(const struct carp_jval *v, int64_t *out);
int carp_jval_bool(const struct carp_jval *v, int *out);
/* A Kubernetes timestamp (RFC 3339): 0 for null; CARP_EPARSE for a
 * string that is not one (*ms 0) or another type. */
int carp_jval_time(const struct carp_jval *v, int64_t *ms);

/* Copying a value whole as compact JSON: a handler given a value it wants
 * kept as text calls carp_jdec_copy(d, v, c). The value is appended to
 * c->out, a container as its members come; c->done is set, and c->start
 * and c->len say where it is in out, once it has ended. However deep it
 * nests (a tree has no limit either): past CARP_JDEC_MAX_DEPTH the rest
 * is written as it is skipped. c must stay put until done. */
struct carp_jcopy {
  struct carp_buf *out;
  size_t start, len;
  int depth; /* containers open */
  int done;
};
void carp_jdec_copy(struct carp_jdec *d, const struct carp_jval *v,
                    struct carp_jcopy *c);

/* The first line of yajl's message for a failed parse (never quoting the
 * input), as a string to free with carp_free. */
char *carp_jdec_yajl_error(yajl_handle h, const char *text, size_t len);

#endif
