/* Fuzz target: YAML to JSON (internal/yaml), as manifests and
 * kubeconfigs are read: the document loaded, converted to JSON text, and
 * that text must parse as JSON. */
#include <stdlib.h>

#include "carpenter/alloc.h"
#include "carpenter/buf.h"
#include "carpenter/json.h"
#include "carpenter/yaml.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  struct carp_yaml_doc doc;
  struct carp_buf out;
  char *err = NULL;
  yajl_val v;
  if (carp_yaml_load((const char *)data, size, "fuzz", &doc, &err)) {
    carp_free(err);
    return 0;
  }
  carp_buf_init(&out, CARP_BUF_UNLIMITED);
  if (carp_yaml_to_json_text(doc.root, &out) == 0) {
    if (carp_json_parse(out.ptr ? out.ptr : "", out.len, &v, NULL))
      abort(); /* the JSON written does not read back */
    carp_json_free(v);
  }
  carp_buf_free(&out);
  carp_yaml_free(&doc);
  return 0;
}
