/* tls.c: TLS settings of a client, applied once to its template easy
 * handle: CA from a file or from memory (CURLOPT_CAINFO_BLOB), client
 * certificate and key from files or memory (CURLOPT_SSLCERT_BLOB,
 * CURLOPT_SSLKEY_BLOB), public-key pins (CURLOPT_PINNEDPUBLICKEY), the
 * explicit insecure switch, and Proxmox-style pinning of the server's
 * certificate by its SHA-256 fingerprint.
 *
 * Fingerprint pinning replaces OpenSSL's chain verification through
 * CURLOPT_SSL_CTX_FUNCTION + SSL_CTX_set_cert_verify_callback: the leaf
 * certificate's DER digest must equal the configured one, and nothing else
 * is checked (no CA, no host name: the exact certificate is pinned).
 *
 * The client owns copies of every string and blob; blobs are handed to curl
 * with CURL_BLOB_NOCOPY since the client outlives all its easy handles. The
 * private key copy is wiped when the client goes. Verification is on unless
 * `insecure` is set. */
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/opensslv.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "carpenter/error.h"
#include "carpenter/log.h"
#include "http_int.h"

static int hexval(char ch)
{
  if (ch >= '0' && ch <= '9')
    return ch - '0';
  if (ch >= 'a' && ch <= 'f')
    return ch - 'a' + 10;
  if (ch >= 'A' && ch <= 'F')
    return ch - 'A' + 10;
  return -1;
}

/* "AA:BB:...:FF" (as Proxmox VE shows it) or 64 hex digits, any case. */
int carp__http_fingerprint_parse(const char *s, unsigned char out[32])
{
  size_t i;
  int colons;

  if (!s)
    return CARP_EINVAL;
  colons = strlen(s) == 32 * 3 - 1;
  if (!colons && strlen(s) != 64)
    return CARP_EINVAL;
  for (i = 0; i < 32; i++) {
    int hi = hexval(s[0]), lo = hexval(s[1]);
    if (hi < 0 || lo < 0)
      return CARP_EINVAL;
    out[i] = (unsigned char)(hi << 4 | lo);
    s += 2;
    if (colons && i < 31) {
      if (*s != ':')
        return CARP_EINVAL;
      s++;
    }
  }
  return 0;
}

static void fingerprint_format(const unsigned char md[32], char out[96])
{
  static const char hex[] = "0123456789ABCDEF";
  size_t i;
  for (i = 0; i < 32; i++) {
    out[i * 3] = hex[md[i] >> 4];
    out[i * 3 + 1] = hex[md[i] & 15];
    out[i * 3 + 2] = i < 31 ? ':' : '\0';
  }
}

/* Replaces X509_verify_cert for connections of a fingerprint-pinned client:
 * 1 accepts the peer, 0 fails the handshake. */
static int verify_fingerprint(X509_STORE_CTX *store, void *arg)
{
  const struct carp__http_tls *t = arg;
  X509 *leaf = X509_STORE_CTX_get0_cert(store);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int mdlen = 0;
  char got[96];

  if (!leaf || !X509_digest(leaf, EVP_sha256(), md, &mdlen) || mdlen != 32) {
    X509_STORE_CTX_set_error(store, X509_V_ERR_UNSPECIFIED);
    return 0;
  }
  if (CRYPTO_memcmp(md, t->fingerprint, 32) != 0) {
    fingerprint_format(md, got);
    CARP_LOG_WARN(CARP_HTTP_LOG, "server certificate fingerprint mismatch",
                  CARP_F_STR("fingerprint", got));
    X509_STORE_CTX_set_error(store, X509_V_ERR_CERT_REJECTED);
    return 0;
  }
  X509_STORE_CTX_set_error(store, X509_V_OK);
  return 1;
}

static CURLcode on_ssl_ctx(CURL *curl, void *ssl_ctx, void *userptr)
{
  struct carp__http_tls *t = userptr;
  (void)curl;
  /* curl sets SSL_MODE_RELEASE_BUFFERS, so OpenSSL frees a connection's
   * 16 KB read buffer whenever it is drained and allocates it again on
   * the next record: on connections that carry a small answer or a watch
   * event every few milliseconds, that large malloc each time made glibc
   * consolidate its fastbins and cost a noticeable share of Carpenter's
   * CPU. Keeping the buffers costs some 30 KB per open connection. */
  SSL_CTX_clear_mode(ssl_ctx, SSL_MODE_RELEASE_BUFFERS);
  if (t->has_fingerprint)
    SSL_CTX_set_cert_verify_callback(ssl_ctx, verify_fingerprint, userptr);
  return CURLE_OK;
}

/* Whether the SSL_CTX curl hands over comes from the OpenSSL we link. */
static int curl_uses_our_openssl(void)
{
  const curl_version_info_data *v = curl_version_info(CURLVERSION_NOW);
  char want[32];
  int n = snprintf(want, sizeof(want), "OpenSSL/%d.", OPENSSL_VERSION_MAJOR);
  return v && v->ssl_version && n > 0 &&
         strncmp(v->ssl_version, want, (size_t)n) == 0;
}

static int check_curl_openssl(void)
{
  const curl_version_info_data *v = curl_version_info(CURLVERSION_NOW);
  if (!curl_uses_our_openssl()) {
    CARP_LOG_ERROR(
        CARP_HTTP_LOG,
        "certificate fingerprints need libcurl built with the "
        "same OpenSSL",
        CARP_F_STR("curl_ssl", v && v->ssl_version ? v->ssl_version : "none"),
        CARP_F_STR("linked", OPENSSL_VERSION_TEXT));
    return CARP_EUNSUPPORTED;
  }
  return 0;
}

static char *dup_mem(const char *p, size_t *len)
{
  if (!p)
    return NULL;
  if (*len == 0)
    *len = strlen(p);
  return carp_strndup(p, *len);
}

static int check_file(const char *what, const char *path)
{
  if (path && access(path, R_OK) != 0) {
    int err = -errno;
    CARP_LOG_ERROR(CARP_HTTP_LOG, "cannot read TLS file",
                   CARP_F_STR("kind", what), CARP_F_STR("path", path),
                   CARP_F_ERR(err));
    return err;
  }
  return 0;
}

int carp__http_tls_init(struct carp__http_tls *t, const struct carp_http_tls *o)
{
  int rc;

  memset(t, 0, sizeof(*t));
  if (o->cert_sha256 && o->insecure)
    return CARP_EINVAL; /* contradictory: refuse rather than guess */
  if ((o->key_file || o->key_pem) && !o->cert_file && !o->cert_pem)
    return CARP_EINVAL;
  if (o->cert_sha256) {
    rc = carp__http_fingerprint_parse(o->cert_sha256, t->fingerprint);
    if (rc) {
      CARP_LOG_ERROR(CARP_HTTP_LOG, "malformed certificate fingerprint");
      return rc;
    }
    rc = check_curl_openssl();
    if (rc)
      return rc;
    t->has_fingerprint = 1;
  }
  t->tune_ctx = curl_uses_our_openssl();
  if ((rc = check_file("ca", o->ca_file)) ||
      (rc = check_file("cert", o->cert_file)) ||
      (rc = check_file("key", o->key_file)))
    return rc;
  t->insecure = !!o->insecure;
  t->ca_file = carp_strdup(o->ca_file);
  t->cert_file = carp_strdup(o->cert_file);
  t->key_file = carp_strdup(o->key_file);
  t->pinned_pubkey = carp_strdup(o->pinned_pubkey);
  t->ca_pem_len = o->ca_pem_len;
  t->ca_pem = dup_mem(o->ca_pem, &t->ca_pem_len);
  t->cert_pem_len = o->cert_pem_len;
  t->cert_pem = dup_mem(o->cert_pem, &t->cert_pem_len);
  t->key_pem_len = o->key_pem_len;
  t->key_pem = dup_mem(o->key_pem, &t->key_pem_len);
  return 0;
}

void carp__http_tls_cleanup(struct carp__http_tls *t)
{
  if (t->key_pem)
    OPENSSL_cleanse(t->key_pem, t->key_pem_len);
  CARP_FREE(&t->key_pem);
  CARP_FREE(&t->cert_pem);
  CARP_FREE(&t->ca_pem);
  CARP_FREE(&t->ca_file);
  CARP_FREE(&t->cert_file);
  CARP_FREE(&t->key_file);
  CARP_FREE(&t->pinned_pubkey);
  OPENSSL_cleanse(t->fingerprint, sizeof(t->fingerprint));
}

int carp__http_tls_apply(struct carp__http_tls *t, CURL *h)
{
  struct curl_blob blob;

  if (t->insecure) {
    CARP_HTTP_SETOPT(h, CURLOPT_SSL_VERIFYPEER, 0L);
    CARP_HTTP_SETOPT(h, CURLOPT_SSL_VERIFYHOST, 0L);
  } else if (t->has_fingerprint) {
    /* Our callback is the whole verification: no CA file, no CA path
     * (so a missing system store does not matter), no host name. */
    CARP_HTTP_SETOPT(h, CURLOPT_SSL_VERIFYPEER, 1L);
    CARP_HTTP_SETOPT(h, CURLOPT_SSL_VERIFYHOST, 0L);
    CARP_HTTP_SETOPT(h, CURLOPT_CAINFO, (char *)NULL);
    CARP_HTTP_SETOPT(h, CURLOPT_CAPATH, (char *)NULL);
    /* on_ssl_ctx (below) does the verification. A resumed session would
     * skip the callback. */
    CARP_HTTP_SETOPT(h, CURLOPT_SSL_SESSIONID_CACHE, 0L);
  } else {
    CARP_HTTP_SETOPT(h, CURLOPT_SSL_VERIFYPEER, 1L);
    CARP_HTTP_SETOPT(h, CURLOPT_SSL_VERIFYHOST, 2L);
    if (t->ca_pem || t->ca_file) {
      /* Trust only the given CA: also drop the default CA path. */
      CARP_HTTP_SETOPT(h, CURLOPT_CAPATH, (char *)NULL);
      if (t->ca_pem) { /* in-memory wins, as in client-go */
        blob.data = t->ca_pem;
        blob.len = t->ca_pem_len;
        blob.flags = CURL_BLOB_NOCOPY;
        CARP_HTTP_SETOPT(h, CURLOPT_CAINFO, (char *)NULL);
        CARP_HTTP_SETOPT(h, CURLOPT_CAINFO_BLOB, &blob);
      } else {
        CARP_HTTP_SETOPT(h, CURLOPT_CAINFO, t->ca_file);
      }
    }
  }

  /* Set whenever curl's SSL_CTX is ours to touch, which fingerprint
   * pinning requires (carp__http_tls_init refuses it otherwise). */
  if (t->tune_ctx) {
    CARP_HTTP_SETOPT(h, CURLOPT_SSL_CTX_FUNCTION, on_ssl_ctx);
    CARP_HTTP_SETOPT(h, CURLOPT_SSL_CTX_DATA, (void *)t);
  }
  if (t->cert_pem) {
    blob.data = t->cert_pem;
    blob.len = t->cert_pem_len;
    blob.flags = CURL_BLOB_NOCOPY;
    CARP_HTTP_SETOPT(h, CURLOPT_SSLCERTTYPE, "PEM");
    CARP_HTTP_SETOPT(h, CURLOPT_SSLCERT_BLOB, &blob);
  } else if (t->cert_file) {
    CARP_HTTP_SETOPT(h, CURLOPT_SSLCERTTYPE, "PEM");
    CARP_HTTP_SETOPT(h, CURLOPT_SSLCERT, t->cert_file);
  }
  if (t->key_pem) {
    blob.data = t->key_pem;
    blob.len = t->key_pem_len;
    blob.flags = CURL_BLOB_NOCOPY;
    CARP_HTTP_SETOPT(h, CURLOPT_SSLKEYTYPE, "PEM");
    CARP_HTTP_SETOPT(h, CURLOPT_SSLKEY_BLOB, &blob);
  } else if (t->key_file) {
    CARP_HTTP_SETOPT(h, CURLOPT_SSLKEYTYPE, "PEM");
    CARP_HTTP_SETOPT(h, CURLOPT_SSLKEY, t->key_file);
  }
  if (t->pinned_pubkey)
    CARP_HTTP_SETOPT(h, CURLOPT_PINNEDPUBLICKEY, t->pinned_pubkey);
  return 0;
}
