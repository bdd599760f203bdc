/* response.c: assembles a struct carp_http_response from the header lines
 * curl hands to CURLOPT_HEADERFUNCTION: the status code, the reason phrase
 * (Proxmox VE puts its error text only there: "HTTP/1.1 500 VM is locked")
 * and every header, in order, with values trimmed of surrounding blanks.
 *
 * curl passes every status line it meets: interim 1xx responses and the
 * final one (CONNECT replies are suppressed by CURLOPT_SUPPRESS_CONNECT_
 * HEADERS). Each status line starts a fresh response, so only the final
 * one's headers are kept. Lines after the header block (chunked trailers)
 * are ignored. Header count and size are capped (CARP_ETOOBIG). */
#include <string.h>
#include <strings.h>

#include "carpenter/error.h"
#include "http_int.h"

void carp__http_response_init(struct carp_http_request *req, size_t max_body)
{
  carp_buf_init(&req->resp.body, max_body);
  req->resp.status = 0;
  req->resp.reason = "";
  req->resp.headers = NULL;
  req->resp.nheaders = 0;
  req->resp.errmsg = "";
}

static void headers_clear(struct carp_http_request *req)
{
  size_t i;
  for (i = 0; i < req->resp.nheaders; i++)
    carp_free((void *)req->hdrs[i].name); /* name and value: one block */
  req->resp.nheaders = 0;
  req->hdr_bytes = 0;
  req->resp.status = 0;
  CARP_FREE(&req->reason);
  req->resp.reason = "";
  req->headers_done = 0;
}

void carp__http_response_cleanup(struct carp_http_request *req)
{
  headers_clear(req);
  CARP_FREE(&req->hdrs);
  req->resp.headers = NULL;
  carp_buf_free(&req->resp.body);
}

static int is_blank(char ch)
{
  return ch == ' ' || ch == '\t';
}

/* "HTTP/1.1 500 VM is locked (clone)" or "HTTP/2 200 ". */
static int parse_status(struct carp_http_request *req, const char *line,
                        size_t len)
{
  const char *p = memchr(line, ' ', len);
  size_t rest;
  long status;

  if (!p)
    return CARP_EHTTP;
  p++;
  rest = len - (size_t)(p - line);
  if (rest < 3 || p[0] < '0' || p[0] > '9' || p[1] < '0' || p[1] > '9' ||
      p[2] < '0' || p[2] > '9')
    return CARP_EHTTP;
  status = (p[0] - '0') * 100 + (p[1] - '0') * 10 + (p[2] - '0');
  p += 3;
  rest -= 3;
  if (rest > 0 && !is_blank(*p))
    return CARP_EHTTP;
  while (rest > 0 && is_blank(*p)) {
    p++;
    rest--;
  }
  while (rest > 0 && is_blank(p[rest - 1]))
    rest--;
  headers_clear(req);
  req->resp.status = status;
  req->reason = carp_strndup(p, rest);
  req->resp.reason = req->reason;
  return 0;
}

static int add_header(struct carp_http_request *req, const char *name,
                      size_t nlen, const char *value, size_t vlen)
{
  size_t n = req->resp.nheaders;
  char *block;

  if (n >= CARP_HTTP_MAX_HEADERS)
    return CARP_ETOOBIG;
  if (n == req->hdrs_cap) {
    req->hdrs_cap = req->hdrs_cap ? req->hdrs_cap * 2 : 16;
    req->hdrs = carp_reallocarray(req->hdrs, req->hdrs_cap, sizeof(*req->hdrs));
  }
  block = carp_malloc(nlen + vlen + 2);
  memcpy(block, name, nlen);
  block[nlen] = '\0';
  memcpy(block + nlen + 1, value, vlen);
  block[nlen + 1 + vlen] = '\0';
  req->hdrs[n].name = block;
  req->hdrs[n].value = block + nlen + 1;
  req->resp.headers = req->hdrs;
  req->resp.nheaders = n + 1;
  return 0;
}

/* Obsolete line folding: the line continues the previous header's value. */
static int continue_header(struct carp_http_request *req, const char *more,
                           size_t mlen)
{
  struct carp_http_header *h;
  size_t nlen, vlen;
  char *block;

  if (req->resp.nheaders == 0)
    return 0; /* nothing to continue: ignore */
  h = &req->hdrs[req->resp.nheaders - 1];
  nlen = strlen(h->name);
  vlen = strlen(h->value);
  block = carp_malloc(nlen + vlen + mlen + 3);
  memcpy(block, h->name, nlen + 1 + vlen);
  block[nlen + 1 + vlen] = ' ';
  memcpy(block + nlen + 2 + vlen, more, mlen);
  block[nlen + 2 + vlen + mlen] = '\0';
  carp_free((void *)h->name);
  h->name = block;
  h->value = block + nlen + 1;
  return 0;
}

int carp__http_response_header_line(struct carp_http_request *req,
                                    const char *line, size_t len)
{
  const char *colon, *value;
  size_t nlen, vlen;

  while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
    len--;
  /* A header name cannot contain '/', so this is a status line. */
  if (len >= 5 && !memcmp(line, "HTTP/", 5))
    return parse_status(req, line, len);
  if (len == 0) {
    if (req->headers_done)
      return 0; /* end of trailers */
    if (req->resp.status >= 100 && req->resp.status < 200)
      return 0; /* interim response: the final one follows */
    req->headers_done = 1;
    return 1;
  }
  if (req->headers_done)
    return 0; /* a trailer */
  req->hdr_bytes += len;
  if (req->hdr_bytes > CARP_HTTP_MAX_HEADER_BYTES)
    return CARP_ETOOBIG;
  if (is_blank(line[0])) {
    while (len > 0 && is_blank(*line)) {
      line++;
      len--;
    }
    while (len > 0 && is_blank(line[len - 1]))
      len--;
    return continue_header(req, line, len);
  }
  colon = memchr(line, ':', len);
  if (!colon || colon == line)
    return 0; /* not a header; curl decides whether the reply is sane */
  nlen = (size_t)(colon - line);
  value = colon + 1;
  vlen = len - nlen - 1;
  while (vlen > 0 && is_blank(*value)) {
    value++;
    vlen--;
  }
  while (vlen > 0 && is_blank(value[vlen - 1]))
    vlen--;
  return add_header(req, line, nlen, value, vlen);
}

const char *carp_http_response_header(const struct carp_http_response *r,
                                      const char *name)
{
  size_t i;

  if (!r || !name)
    return NULL;
  for (i = r->nheaders; i-- > 0;)
    if (!strcasecmp(r->headers[i].name, name))
      return r->headers[i].value;
  return NULL;
}
