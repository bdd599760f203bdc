/* client.c: a carp_http_client drives one libcurl multi handle from a libuv
 * loop, after curl's docs/examples/multi-uv.c with the fixes listed in
 * style-anchors section 2: one uv_poll_t per socket curl asks us to watch,
 * one uv_timer_t for curl's timeout, CURL_CSELECT_ERR when a poll reports
 * an error, and check_multi_info() after every curl_multi_socket_action().
 *
 * Invariants:
 * - curl_multi_add_handle and curl_multi_remove_handle are called only from
 *   the defer timer or from dispatch(), never inside a curl callback;
 * - on_done runs only from dispatch(), which never nests;
 * - shutdown is: stop new work, deliver every request (ECANCELED), then
 *   curl_multi_cleanup (which may still call the socket callback), then
 *   close the timers, the check handle and any poll curl left behind. The
 *   client is freed in the last close callback, so the loop runs dry and
 *   uv_loop_close() succeeds.
 * - the loop is kept alive by the `busy` check handle while a request is
 *   undelivered, and by the defer timer while work is queued; curl's own
 *   timer and polls are unref'd, so an idle client does not hold the loop.
 * - with stream_coalesce_ms, a socket whose transfer streams (a watch) is
 *   read at once when it turns readable, and once that read delivered
 *   data it is parked: its poll stops until the coalesce timer, which
 *   reads every parked socket that has data meanwhile (parking it again)
 *   and watches the others again. Data after a quiet spell is read
 *   without delay; a steady stream costs one wake-up per window, not one
 *   per event. A socket is never parked while curl wants to write on it
 *   or while it serves a buffered response. */
#include <limits.h>
#include <pthread.h>
#include <string.h>
#include <sys/ioctl.h>

#include "carpenter/error.h"
#include "carpenter/log.h"
#include "carpenter/version.h"
#include "http_int.h"

struct carp__http_sock {
  struct carp_http_link link; /* on client->socks while open */
  struct carp_http_client *client;
  uv_poll_t poll;
  curl_socket_t fd;
  int events;    /* what curl last asked to watch */
  int streaming; /* its transfer streams (a watch): reads may wait */
  int parked;    /* read lately: not watched until the coalesce timer */
  int closed;    /* sock_close ran; memory lives until on_sock_closed */
  struct carp_http_link parked_link; /* on client->parked while parked */
};

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc = CURLE_FAILED_INIT;

static void global_init_once(void)
{
  global_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

int carp_http_global_init(void)
{
  if (pthread_once(&global_once, global_init_once) != 0)
    return CARP_EINVAL;
  if (global_rc != CURLE_OK) {
    CARP_LOG_ERROR(CARP_HTTP_LOG, "curl_global_init failed",
                   CARP_F_STR("detail", curl_easy_strerror(global_rc)));
    return CARP_ENOMEM;
  }
  return 0;
}

void carp_http_global_cleanup(void)
{
  if (global_rc == CURLE_OK)
    curl_global_cleanup();
}

static void check_multi_info(struct carp_http_client *c);
static void dispatch(struct carp_http_client *c);
static void teardown(struct carp_http_client *c);

/* --- handle bookkeeping ------------------------------------------------ */

static void client_free(struct carp_http_client *c)
{
  void (*cb)(void *) = c->close_cb;
  void *arg = c->close_arg;

  carp__http_tls_cleanup(&c->tls);
  carp_free(c->user_agent);
  carp_free(c);
  if (cb)
    cb(arg);
}

static void handle_closed(struct carp_http_client *c)
{
  c->nhandles--;
  if (c->nhandles == 0 && c->torn_down)
    client_free(c);
}

static void on_timer_closed(uv_handle_t *h)
{
  struct carp_http_client *c = h->data;
  handle_closed(c);
}

static void on_sock_closed(uv_handle_t *h)
{
  struct carp__http_sock *s =
      carp_container_of((uv_poll_t *)h, struct carp__http_sock, poll);
  struct carp_http_client *c = s->client;
  carp_free(s);
  handle_closed(c);
}

/* Stops watching a socket. curl calls CURL_POLL_REMOVE before it closes the
 * descriptor, so libuv never polls a closed or reused fd. */
static void sock_close(struct carp__http_sock *s)
{
  carp__http_list_remove(&s->link);
  if (s->parked)
    carp__http_list_remove(&s->parked_link);
  s->parked = 0;
  s->closed = 1;
  uv_close((uv_handle_t *)&s->poll, on_sock_closed);
}

/* --- requests: liveness, queueing -------------------------------------- */

static void on_busy(uv_check_t *h)
{
  (void)h; /* only holds the loop open */
}

int carp__http_client_acquire(struct carp_http_client *c)
{
  if (c->nrequests == 0) {
    int rc = uv_check_start(&c->busy, on_busy);
    if (rc)
      return rc;
  }
  c->nrequests++;
  return 0;
}

void carp__http_client_release(struct carp_http_client *c)
{
  c->nrequests--;
  if (c->nrequests == 0) {
    int rc = uv_check_stop(&c->busy);
    if (rc)
      CARP_LOG_ERROR(CARP_HTTP_LOG, "uv_check_stop failed", CARP_F_ERR(rc));
  }
}

static void on_defer(uv_timer_t *t)
{
  struct carp_http_client *c =
      carp_container_of(t, struct carp_http_client, defer);

  while (!c->closing && !carp__http_list_empty(&c->pending)) {
    struct carp_http_request *req =
        carp_container_of(c->pending.next, struct carp_http_request, link);
    carp__http_request_add(req); /* moves req to running or finished */
  }
  dispatch(c);
  if (c->closing && !c->torn_down && c->nrequests == 0)
    teardown(c);
}

/* Makes the defer timer run on the next loop iteration. */
void carp__http_client_kick(struct carp_http_client *c)
{
  int rc;
  if (c->torn_down || uv_is_active((uv_handle_t *)&c->defer))
    return;
  rc = uv_timer_start(&c->defer, on_defer, 0, 0);
  if (rc) /* only fails for a closing handle or a NULL callback */
    CARP_LOG_ERROR(CARP_HTTP_LOG, "uv_timer_start failed", CARP_F_ERR(rc));
}

/* Runs on_done for every request whose result is known. Called only when
 * no curl callback is on the stack. on_done may start, cancel or close:
 * new work lands on the lists and is picked up here or by the defer timer. */
static void dispatch(struct carp_http_client *c)
{
  if (c->dispatching)
    return;
  c->dispatching = 1;
  while (!carp__http_list_empty(&c->finished)) {
    struct carp_http_request *req =
        carp_container_of(c->finished.next, struct carp_http_request, link);
    carp__http_list_remove(&req->link);
    carp__http_request_deliver(req);
  }
  c->dispatching = 0;
}

/* --- idle timeouts ----------------------------------------------------- */

static void on_idle(uv_timer_t *t)
{
  struct carp_http_client *c =
      carp_container_of(t, struct carp_http_client, idle);
  uint64_t now = uv_now(c->loop);
  uint64_t next = UINT64_MAX;
  struct carp_http_link *l, *nx;

  for (l = c->running.next; l != &c->running; l = nx) {
    struct carp_http_request *req =
        carp_container_of(l, struct carp_http_request, link);
    uint64_t deadline;
    nx = l->next; /* finish() moves req to another list */
    if (!req->idle_timeout_ms)
      continue;
    deadline = req->last_rx + req->idle_timeout_ms;
    if (now >= deadline)
      carp__http_request_finish(req, CARP_ETIMEDOUT,
                                "idle timeout: no data received", 0);
    else if (deadline - now < next)
      next = deadline - now;
  }
  if (next != UINT64_MAX)
    carp__http_client_arm_idle(c, next);
}

/* Makes sure the idle sweep runs within ms. Data arriving only pushes
 * deadlines later, so the sweep may run early; it then re-arms itself. */
void carp__http_client_arm_idle(struct carp_http_client *c, uint64_t ms)
{
  int rc;
  if (uv_is_active((uv_handle_t *)&c->idle) &&
      uv_timer_get_due_in(&c->idle) <= ms)
    return;
  rc = uv_timer_start(&c->idle, on_idle, ms, 0);
  if (rc)
    CARP_LOG_ERROR(CARP_HTTP_LOG, "uv_timer_start failed", CARP_F_ERR(rc));
}

/* --- curl <-> libuv ---------------------------------------------------- */

static void socket_action(struct carp_http_client *c, curl_socket_t fd,
                          int flags)
{
  int running = 0;
  CURLMcode mc;

  if (!c->multi)
    return;
  mc = curl_multi_socket_action(c->multi, fd, flags, &running);
  if (mc != CURLM_OK)
    CARP_LOG_ERROR(CARP_HTTP_LOG, "curl_multi_socket_action failed",
                   CARP_F_STR("detail", curl_multi_strerror(mc)));
  /* Always, even when running is 0: that is when the last one finished. */
  check_multi_info(c);
}

static void on_poll(uv_poll_t *h, int status, int events);
static void on_coalesce(uv_timer_t *t);

/* After a read of a streaming response: stop watching the socket until
 * the coalesce timer, which reads whatever came meanwhile. Not when curl
 * wants to write, or no longer streams on it. */
static void park(struct carp__http_sock *s)
{
  struct carp_http_client *c = s->client;
  if (s->closed || s->parked || !s->streaming || (s->events & UV_WRITABLE) ||
      uv_poll_stop(&s->poll))
    return;
  if (!uv_is_active((uv_handle_t *)&c->coalesce) &&
      uv_timer_start(&c->coalesce, on_coalesce, c->stream_coalesce_ms, 0)) {
    (void)uv_poll_start(&s->poll, s->events, on_poll); /* unparked then */
    return;
  }
  s->parked = 1;
  carp__http_list_push(&c->parked, &s->parked_link);
}

/* Reads what a streaming socket holds. curl reads until its buffers are
 * dry or it has looped enough; what the kernel still holds after that is
 * read at once rather than a window later, so a burst is never
 * throttled. s may be closed when this returns. */
static void read_stream(struct carp_http_client *c, struct carp__http_sock *s)
{
  int i, avail = 0;
  for (i = 0; i < 16; i++) {
    socket_action(c, s->fd, CURL_CSELECT_IN);
    if (s->closed || ioctl(s->fd, FIONREAD, &avail) != 0 || avail <= 0)
      break;
  }
}

/* The window is over: every parked socket that has data is read and
 * parked again (a steady stream is read once a window); the others are
 * watched again, so the next event after a quiet spell is read at once. */
static void on_coalesce(uv_timer_t *t)
{
  struct carp_http_client *c =
      carp_container_of(t, struct carp_http_client, coalesce);
  struct carp_http_link due;
  carp__http_list_init(&due);
  /* Sockets parked again while these are read wait for the next window. */
  while (!carp__http_list_empty(&c->parked)) {
    struct carp_http_link *l = c->parked.next;
    carp__http_list_remove(l);
    carp__http_list_push(&due, l);
  }
  while (!carp__http_list_empty(&due)) {
    struct carp__http_sock *s =
        carp_container_of(due.next, struct carp__http_sock, parked_link);
    int avail = 0, rc;
    carp__http_list_remove(&s->parked_link);
    s->parked = 0;
    if (ioctl(s->fd, FIONREAD, &avail) == 0 && avail > 0) {
      read_stream(c, s);
      park(s);
      continue;
    }
    rc = uv_poll_start(&s->poll, s->events, on_poll);
    if (rc)
      CARP_LOG_ERROR(CARP_HTTP_LOG, "uv_poll_start failed", CARP_F_ERR(rc));
  }
}

static void on_poll(uv_poll_t *h, int status, int events)
{
  struct carp__http_sock *s =
      carp_container_of(h, struct carp__http_sock, poll);
  int flags = 0;

  /* s's memory lives until on_sock_closed, which runs in a later loop
   * phase: read_stream and park may look at it after curl closed it. */
  if (status == 0 && events == UV_READABLE && s->streaming &&
      s->client->stream_coalesce_ms) {
    uint64_t before = s->client->streamed;
    read_stream(s->client, s);
    if (s->client->streamed != before)
      park(s);
    return;
  }

  /* libuv reports a socket error (a reset peer, a refused connect) as
   * status < 0 and stops the poll; curl must hear about it. */
  if (status < 0)
    flags |= CURL_CSELECT_ERR;
  if (events & UV_READABLE)
    flags |= CURL_CSELECT_IN;
  if (events & UV_WRITABLE)
    flags |= CURL_CSELECT_OUT;
  /* s may be closed during the call (its memory lives until on_sock_closed,
   * which runs in a later loop phase), so nothing of it is used after. */
  socket_action(s->client, s->fd, flags);
}

static void on_timer(uv_timer_t *t)
{
  struct carp_http_client *c =
      carp_container_of(t, struct carp_http_client, timer);
  socket_action(c, CURL_SOCKET_TIMEOUT, 0);
}

/* A socket could not be watched: fail the transfer that owns it. curl
 * releases the socket when the easy handle is removed. */
static void fail_easy(CURL *easy, int err)
{
  char *priv = NULL;
  if (curl_easy_getinfo(easy, CURLINFO_PRIVATE, &priv) != CURLE_OK || !priv)
    return;
  carp__http_request_finish((struct carp_http_request *)(void *)priv, err,
                            "cannot watch socket", 0);
}

/* The transfer streams its body to on_data (a watch) rather than
 * buffering a response. */
static int easy_streams(CURL *easy)
{
  char *priv = NULL;
  if (!easy || curl_easy_getinfo(easy, CURLINFO_PRIVATE, &priv) != CURLE_OK ||
      !priv)
    return 0;
  return ((struct carp_http_request *)(void *)priv)->on_data != NULL;
}

static int on_socket(CURL *easy, curl_socket_t fd, int what, void *userp,
                     void *socketp)
{
  struct carp_http_client *c = userp;
  struct carp__http_sock *s = socketp;
  int events = 0;
  int rc;

  if (what == CURL_POLL_REMOVE) {
    if (s) {
      sock_close(s);
      /* Fails harmlessly inside curl_multi_cleanup. */
      (void)curl_multi_assign(c->multi, fd, NULL);
    }
    return 0;
  }
  if (what & CURL_POLL_IN)
    events |= UV_READABLE;
  if (what & CURL_POLL_OUT)
    events |= UV_WRITABLE;

  if (!s) {
    CURLMcode mc;
    s = CARP_NEW(struct carp__http_sock);
    s->client = c;
    s->fd = fd;
    carp__http_list_init(&s->link);
    rc = uv_poll_init_socket(c->loop, &s->poll, fd);
    if (rc) {
      CARP_LOG_ERROR(CARP_HTTP_LOG, "uv_poll_init_socket failed",
                     CARP_F_ERR(rc));
      carp_free(s);
      fail_easy(easy, rc);
      return 0;
    }
    c->nhandles++;
    uv_unref((uv_handle_t *)&s->poll);
    carp__http_list_push(&c->socks, &s->link);
    mc = curl_multi_assign(c->multi, fd, s);
    if (mc != CURLM_OK) {
      CARP_LOG_ERROR(CARP_HTTP_LOG, "curl_multi_assign failed",
                     CARP_F_STR("detail", curl_multi_strerror(mc)));
      sock_close(s);
      fail_easy(easy, CARP_EIO);
      return 0;
    }
  }
  s->events = events;
  s->streaming = easy_streams(easy);
  if (s->parked) {
    if (s->streaming && !(events & UV_WRITABLE))
      return 0; /* the coalesce timer watches it again */
    /* Now a transfer that must not wait: watch again at once. */
    carp__http_list_remove(&s->parked_link);
    s->parked = 0;
  }
  /* On an active poll this only changes the event mask. */
  rc = uv_poll_start(&s->poll, events, on_poll);
  if (rc) {
    CARP_LOG_ERROR(CARP_HTTP_LOG, "uv_poll_start failed", CARP_F_ERR(rc));
    fail_easy(easy, rc);
  }
  return 0;
}

static int on_curl_timer(CURLM *multi, long timeout_ms, void *userp)
{
  struct carp_http_client *c = userp;
  int rc;

  (void)multi;
  if (timeout_ms < 0) {
    rc = uv_timer_stop(&c->timer);
  } else {
    /* Even for 0: curl must not be called from inside this callback, and
     * a uv timer defers it to the loop. Replaces any earlier timeout. */
    rc = uv_timer_start(&c->timer, on_timer, (uint64_t)timeout_ms, 0);
  }
  if (rc) {
    CARP_LOG_ERROR(CARP_HTTP_LOG, "curl timer update failed", CARP_F_ERR(rc));
    return -1;
  }
  return 0;
}

static void check_multi_info(struct carp_http_client *c)
{
  CURLMsg *msg;
  int left;

  while (c->multi && (msg = curl_multi_info_read(c->multi, &left))) {
    char *priv = NULL;
    if (msg->msg != CURLMSG_DONE)
      continue;
    if (curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &priv) !=
            CURLE_OK ||
        !priv)
      continue;
    /* Records the result only: the handle is removed in dispatch(). */
    carp__http_request_curl_done((struct carp_http_request *)(void *)priv,
                                 msg->data.result);
  }
  dispatch(c);
}

/* --- setup and shutdown ------------------------------------------------ */

static int multi_setup(struct carp_http_client *c,
                       const struct carp_http_client_options *opts)
{
  CURLMcode mc = CURLM_OK;

  c->multi = curl_multi_init();
  if (!c->multi)
    return CARP_ENOMEM;
  if (mc == CURLM_OK)
    mc = curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
  if (mc == CURLM_OK)
    mc = curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c);
  if (mc == CURLM_OK)
    mc = curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, on_curl_timer);
  if (mc == CURLM_OK)
    mc = curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c);
  if (mc == CURLM_OK && opts->max_host_connections > 0)
    mc = curl_multi_setopt(c->multi, CURLMOPT_MAX_HOST_CONNECTIONS,
                           opts->max_host_connections);
  if (mc != CURLM_OK) {
    CARP_LOG_ERROR(CARP_HTTP_LOG, "curl_multi_setopt failed",
                   CARP_F_STR("detail", curl_multi_strerror(mc)));
    return CARP_EINVAL;
  }
  return 0;
}

/* The template every request duplicates: options common to all requests of
 * this client, so they are checked once, here. */
static int template_setup(struct carp_http_client *c,
                          const struct carp_http_client_options *opts)
{
  CURL *h;
  long connect_ms;

  c->tmpl = curl_easy_init();
  if (!c->tmpl)
    return CARP_ENOMEM;
  h = c->tmpl;
  connect_ms = opts->connect_timeout_ms == 0 ? 10000
               : opts->connect_timeout_ms > (uint64_t)LONG_MAX
                   ? LONG_MAX
                   : (long)opts->connect_timeout_ms;
  CARP_HTTP_SETOPT(h, CURLOPT_NOSIGNAL, 1L);
  CARP_HTTP_SETOPT(h, CURLOPT_PROTOCOLS_STR, "http,https");
  CARP_HTTP_SETOPT(h, CURLOPT_FOLLOWLOCATION, 0L);
  CARP_HTTP_SETOPT(h, CURLOPT_USERAGENT, c->user_agent);
  CARP_HTTP_SETOPT(h, CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
  /* Long watches must notice a peer that vanished without a FIN. */
  CARP_HTTP_SETOPT(h, CURLOPT_TCP_KEEPALIVE, 1L);
  CARP_HTTP_SETOPT(h, CURLOPT_TCP_KEEPIDLE, 30L);
  CARP_HTTP_SETOPT(h, CURLOPT_TCP_KEEPINTVL, 10L);
  /* No CURLOPT_PIPEWAIT: over HTTP/1.1 it makes every request wait until
   * the first response's headers show the connection cannot multiplex, so
   * one slow request would hold up all others. */
  CARP_HTTP_SETOPT(h, CURLOPT_SUPPRESS_CONNECT_HEADERS, 1L);
  /* Over TLS curl copies every request (headers and body) through an
   * upload buffer it allocates per transfer and keeps for the transfer's
   * life: 64 KB by default, held by each watch for hours and by each of
   * the hundred-odd requests in flight while scaling out. 16 KB (curl's
   * least) only sends a large body in more pieces. */
  CARP_HTTP_SETOPT(h, CURLOPT_UPLOAD_BUFFERSIZE, 16384L);
  /* Removing a transfer whose host name is still being resolved would
   * otherwise join curl's resolver thread, blocking the loop until
   * getaddrinfo() returns; with this the thread is detached and frees its
   * own memory when the lookup ends. */
  CARP_HTTP_SETOPT(h, CURLOPT_QUICK_EXIT, 1L);
  return carp__http_tls_apply(&c->tls, h);
}

int carp_http_client_set_max_host_connections(struct carp_http_client *c,
                                              long n)
{
  if (!c || n < 0 ||
      curl_multi_setopt(c->multi, CURLMOPT_MAX_HOST_CONNECTIONS, n) != CURLM_OK)
    return CARP_EINVAL;
  return 0;
}

int carp_http_client_new(uv_loop_t *loop,
                         const struct carp_http_client_options *opts,
                         struct carp_http_client **out)
{
  static const struct carp_http_client_options defaults;
  struct carp_http_client *c;
  uv_timer_t *timers[4];
  size_t i;
  int rc;

  if (!loop || !out)
    return CARP_EINVAL;
  *out = NULL;
  if (!opts)
    opts = &defaults;
  if (opts->max_host_connections < 0)
    return CARP_EINVAL;
  rc = carp_http_global_init();
  if (rc)
    return rc;

  c = CARP_NEW(struct carp_http_client);
  c->loop = loop;
  carp__http_list_init(&c->pending);
  carp__http_list_init(&c->running);
  carp__http_list_init(&c->finished);
  carp__http_list_init(&c->socks);
  carp__http_list_init(&c->parked);
  c->stream_coalesce_ms = opts->stream_coalesce_ms;
  c->user_agent = opts->user_agent ? carp_strdup(opts->user_agent)
                                   : carp_strdup("carpenter/" CARP_VERSION);
  rc = carp__http_tls_init(&c->tls, &opts->tls);
  if (!rc)
    rc = template_setup(c, opts);
  if (!rc)
    rc = multi_setup(c, opts);
  if (rc) {
    if (c->multi)
      (void)curl_multi_cleanup(c->multi);
    if (c->tmpl)
      curl_easy_cleanup(c->tmpl);
    client_free(c);
    return rc;
  }

  /* libuv handles last: after a successful init they must be closed, and
   * the client freed only once they are. */
  timers[0] = &c->timer;
  timers[1] = &c->defer;
  timers[2] = &c->idle;
  timers[3] = &c->coalesce;
  for (i = 0; i < CARP_ARRAY_LEN(timers) && !rc; i++) {
    rc = uv_timer_init(loop, timers[i]);
    if (!rc) {
      timers[i]->data = c;
      c->nhandles++;
    }
  }
  if (!rc) {
    rc = uv_check_init(loop, &c->busy);
    if (!rc) {
      c->busy.data = c;
      c->nhandles++;
    }
  }
  if (rc) {
    /* Nothing was started: tear down at once; the memory goes when the
     * handles initialised so far are closed. */
    c->closing = 1;
    teardown(c);
    return rc;
  }
  uv_unref((uv_handle_t *)&c->timer);
  uv_unref((uv_handle_t *)&c->idle);
  uv_unref((uv_handle_t *)&c->coalesce);
  *out = c;
  return 0;
}

/* Releases curl, then closes every libuv handle. Only with no request left
 * and outside curl callbacks. */
static void teardown(struct carp_http_client *c)
{
  uv_handle_t *handles[5];
  size_t i, n = 0;

  c->torn_down = 1;
  if (c->multi) {
    /* May call on_socket(CURL_POLL_REMOVE) for cached connections. */
    CURLMcode mc = curl_multi_cleanup(c->multi);
    if (mc != CURLM_OK)
      CARP_LOG_ERROR(CARP_HTTP_LOG, "curl_multi_cleanup failed",
                     CARP_F_STR("detail", curl_multi_strerror(mc)));
    c->multi = NULL;
  }
  if (c->tmpl) {
    curl_easy_cleanup(c->tmpl);
    c->tmpl = NULL;
  }
  while (!carp__http_list_empty(&c->socks))
    sock_close(carp_container_of(c->socks.next, struct carp__http_sock, link));

  /* nhandles says which were initialised: they come in this order. */
  if (c->timer.loop)
    handles[n++] = (uv_handle_t *)&c->timer;
  if (c->defer.loop)
    handles[n++] = (uv_handle_t *)&c->defer;
  if (c->idle.loop)
    handles[n++] = (uv_handle_t *)&c->idle;
  if (c->coalesce.loop)
    handles[n++] = (uv_handle_t *)&c->coalesce;
  if (c->busy.loop)
    handles[n++] = (uv_handle_t *)&c->busy;
  if (c->nhandles == 0) { /* nothing to wait for */
    client_free(c);
    return;
  }
  for (i = 0; i < n; i++)
    uv_close(handles[i], on_timer_closed);
}

void carp_http_client_close(struct carp_http_client *c,
                            void (*close_cb)(void *arg), void *arg)
{
  struct carp_http_link *l;

  if (!c)
    return;
  if (c->closing) {
    CARP_LOG_ERROR(CARP_HTTP_LOG, "carp_http_client_close called twice");
    return;
  }
  c->closing = 1;
  c->close_cb = close_cb;
  c->close_arg = arg;
  while (!carp__http_list_empty(&c->pending))
    carp__http_request_finish(
        carp_container_of(c->pending.next, struct carp_http_request, link),
        CARP_ECANCELED, "client closed", 1);
  while (!carp__http_list_empty(&c->running))
    carp__http_request_finish(
        carp_container_of(c->running.next, struct carp_http_request, link),
        CARP_ECANCELED, "client closed", 1);
  for (l = c->finished.next; l != &c->finished; l = l->next)
    carp__http_request_finish(
        carp_container_of(l, struct carp_http_request, link), CARP_ECANCELED,
        "client closed", 1);
  /* Deliveries and teardown happen in the defer timer, never here: the
   * caller may be inside one of our callbacks. */
  carp__http_client_kick(c);
}
