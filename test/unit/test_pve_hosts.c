/* test_pve_hosts.c: the Proxmox provider's view of its hosts, without a
 * Proxmox: which hosts GET /cluster/ha/status/current shows in HA
 * maintenance (the lrm entries' text, PVE 8 and 9 shapes), how each
 * host's state and "since" move from one refresh to the next (Offline
 * before Maintenance before Ready; HA status applied where the listing
 * had no hastate), and placement and offerings leaving out hosts offline
 * or in maintenance - and taking a host back once it is back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "carpenter/alloc.h"
#include "carpenter/error.h"
#include "carpenter/json.h"
#include "carpenter/log.h"
#include "pve_int.h"

#define GiB (1024LL * 1024 * 1024)

static yajl_val parse(const char *text)
{
  yajl_val v = NULL;
  char *err = NULL;
  assert_int_equal(carp_json_parse(text, strlen(text), &v, &err), 0);
  return v;
}

/* --- the HA status -------------------------------------------------------- */

static void test_ha_maintenance_parse(void **state)
{
  /* As pve-ha-manager's API2/HA/Status.pm builds it: PVE 8 ("NODE (STATE,
   * TIME)") for pve1..pve3 and pve10, PVE 9 with the watchdog for pve4. */
  yajl_val v = parse(
      "[{\"id\":\"quorum\",\"type\":\"quorum\",\"node\":\"pve1\","
      "\"status\":\"OK\",\"quorate\":1},"
      "{\"id\":\"master\",\"type\":\"master\",\"node\":\"pve1\","
      "\"status\":\"pve1 (active, Tue Oct 10 10:00:00 2023)\","
      "\"timestamp\":1696932000},"
      "{\"id\":\"lrm:pve1\",\"type\":\"lrm\",\"node\":\"pve1\","
      "\"status\":\"pve1 (idle, Tue Oct 10 10:00:00 2023)\"},"
      "{\"id\":\"lrm:pve10\",\"type\":\"lrm\",\"node\":\"pve10\","
      "\"status\":\"pve10 (maintenance mode, Tue Oct 10 10:00:00 2023)\"},"
      "{\"id\":\"lrm:pve2\",\"type\":\"lrm\",\"node\":\"pve2\","
      "\"status\":\"pve2 (old timestamp - dead?, Tue Oct 10 09:00:00 "
      "2023)\"},"
      "{\"id\":\"lrm:pve3\",\"type\":\"lrm\",\"node\":\"pve3\","
      "\"status\":\"pve3 (unable to read lrm status)\"},"
      "{\"id\":\"lrm:pve4\",\"type\":\"lrm\",\"node\":\"pve4\",\"status\":"
      "\"pve4 (maintenance mode, watchdog standby, Tue Oct 10 10:00:00 "
      "2023)\"},"
      "{\"id\":\"service:vm:100\",\"type\":\"service\",\"node\":\"pve1\","
      "\"sid\":\"vm:100\",\"status\":\"vm:100 (pve1, maintenance mode)\"}]");
  yajl_val bad = parse("{\"lrm\":1}");
  char out[8][64];
  assert_int_equal(pve_ha_maintenance_parse(v, out, 8), 2);
  assert_string_equal(out[0], "pve10");
  assert_string_equal(out[1], "pve4");
  /* Room for one: the count says so. */
  assert_int_equal(pve_ha_maintenance_parse(v, out, 1), 1);
  assert_int_equal(pve_ha_maintenance_parse(bad, out, 8), CARP_EPARSE);
  assert_int_equal(pve_ha_maintenance_parse(NULL, out, 8), CARP_EPARSE);
  carp_json_free(v);
  carp_json_free(bad);
}

/* --- host states ---------------------------------------------------------- */

struct world {
  struct pve_provider pp;
  struct pve_region r;
  struct pve_host hosts[3];
  struct pve_guest guests[3];
};

static void host(struct world *w, size_t i, enum pve_host_status st,
                 int maintenance)
{
  struct pve_host *h = &w->hosts[i];
  h->status = st;
  h->online = st == PVE_HOST_ONLINE;
  h->maintenance = maintenance;
  h->has_hastate = w->r.inv.has_hastate;
}

static void world_init(struct world *w)
{
  size_t i;
  memset(w, 0, sizeof(*w));
  carp_map_init(&w->pp.ice);
  w->pp.o.ice_ttl_ms = 180000;
  w->pp.o.refresh_interval_ms = 30000;
  snprintf(w->pp.cluster_tag, sizeof(w->pp.cluster_tag), "carpenter-test");
  w->pp.regions = &w->r;
  w->pp.nregions = 1;
  w->r.pp = &w->pp;
  snprintf(w->r.name, sizeof(w->r.name), "lab");
  w->r.inv.hosts = w->hosts;
  w->r.inv.nhosts = 3;
  w->r.inv.guests = w->guests;
  w->r.inv.nguests = 3;
  w->r.inv.fetched_ms = 1;
  w->r.inv.has_hastate = 1;
  for (i = 0; i < 3; i++) {
    snprintf(w->hosts[i].name, sizeof(w->hosts[i].name), "pve%zu", i + 1);
    w->hosts[i].maxcpu = 32;
    w->hosts[i].maxmem = 128 * GiB;
    host(w, i, PVE_HOST_ONLINE, 0);
    /* A template per host. */
    w->guests[i].vmid = 9000 + (int64_t)i;
    snprintf(w->guests[i].node, sizeof(w->guests[i].node), "pve%zu", i + 1);
    snprintf(w->guests[i].name, sizeof(w->guests[i].name), "k3s");
    w->guests[i].template_ = 1;
  }
}

static void world_free(struct world *w)
{
  struct carp_map_iter it;
  void *v;
  carp_map_iter_init(&it);
  while (carp_map_next(&w->pp.ice, &it, NULL, NULL, &v))
    carp_free(v);
  carp_map_free(&w->pp.ice);
  pve_hosts_free(&w->r);
}

static const struct pve_host_state *st(struct world *w, const char *name)
{
  const struct pve_host_state *s = pve_region_host_state(&w->r, name);
  assert_non_null(s);
  return s;
}

static void test_states_and_since(void **state)
{
  struct world w;
  (void)state;
  world_init(&w);
  host(&w, 1, PVE_HOST_OFFLINE, 0);
  host(&w, 2, PVE_HOST_ONLINE, 1);
  pve_hosts_update(&w.r, 1000);
  assert_int_equal(st(&w, "pve1")->state, CARP_ZONE_READY);
  assert_int_equal(st(&w, "pve2")->state, CARP_ZONE_OFFLINE);
  assert_int_equal(st(&w, "pve3")->state, CARP_ZONE_MAINTENANCE);
  assert_true(st(&w, "pve2")->since_ms == 1000);
  /* The same view later: since stays. */
  pve_hosts_update(&w.r, 2000);
  assert_true(st(&w, "pve2")->since_ms == 1000);
  assert_true(st(&w, "pve3")->since_ms == 1000);
  /* pve2 back, pve3 offline while still in maintenance: offline wins. */
  host(&w, 1, PVE_HOST_ONLINE, 0);
  host(&w, 2, PVE_HOST_OFFLINE, 1);
  pve_hosts_update(&w.r, 3000);
  assert_int_equal(st(&w, "pve2")->state, CARP_ZONE_READY);
  assert_true(st(&w, "pve2")->since_ms == 3000);
  assert_int_equal(st(&w, "pve3")->state, CARP_ZONE_OFFLINE);
  assert_true(st(&w, "pve3")->since_ms == 3000);
  /* pve2 offline again: its toleration starts over. */
  host(&w, 1, PVE_HOST_OFFLINE, 0);
  pve_hosts_update(&w.r, 4000);
  assert_true(st(&w, "pve2")->since_ms == 4000);
  /* No stats from a host: unknown, not offline. */
  host(&w, 0, PVE_HOST_UNKNOWN, 0);
  pve_hosts_update(&w.r, 5000);
  assert_int_equal(st(&w, "pve1")->state, CARP_ZONE_UNKNOWN);
  assert_null(pve_region_host_state(&w.r, "pve9"));
  world_free(&w);
}

static void test_ha_status_applied_without_hastate(void **state)
{
  struct world w;
  yajl_val v = parse("[{\"type\":\"lrm\",\"node\":\"pve1\",\"status\":"
                     "\"pve1 (maintenance mode, Tue Oct 10 10:00:00 "
                     "2023)\"}]");
  (void)state;
  world_init(&w);
  /* With hastate in the listing, the HA status is neither read nor used. */
  assert_false(pve_ha_due(&w.r));
  w.r.inv.has_hastate = 0;
  assert_true(pve_ha_due(&w.r));
  pve_ha_result(&w.r, 0, "", v);
  assert_false(pve_ha_due(&w.r)); /* read a moment ago */
  pve_hosts_update(&w.r, 1000);
  assert_true(w.hosts[0].maintenance);
  assert_false(w.hosts[1].maintenance);
  assert_int_equal(st(&w, "pve1")->state, CARP_ZONE_MAINTENANCE);
  /* A failed read keeps what the last one said. */
  pve_ha_result(&w.r, CARP_EFORBIDDEN, "Permission check failed", NULL);
  w.hosts[0].maintenance = 0;
  pve_hosts_update(&w.r, 2000);
  assert_true(w.hosts[0].maintenance);
  assert_true(st(&w, "pve1")->since_ms == 1000);
  /* The listing carries hastate again: it alone counts. */
  w.r.inv.has_hastate = 1;
  w.hosts[0].maintenance = 0;
  pve_hosts_update(&w.r, 3000);
  assert_false(w.hosts[0].maintenance);
  assert_int_equal(st(&w, "pve1")->state, CARP_ZONE_READY);
  carp_json_free(v);
  world_free(&w);
}

/* --- placement ------------------------------------------------------------ */

static void spec_init(struct pve_vm_spec *s, struct pve_type *t)
{
  memset(s, 0, sizeof(*s));
  memset(t, 0, sizeof(*t));
  snprintf(t->name, sizeof(t->name), "c1.2VCPU-4GB");
  t->cpu = 2;
  t->memory = 4 * GiB;
  t->price = 0.1;
  s->types = t;
  s->ntypes = 1;
  s->tmpl_name = (char *)"k3s";
  s->cpu_over = 100;
  s->mem_over = 100;
}

static size_t offered(struct world *w, const struct pve_vm_spec *s,
                      const char *zone)
{
  struct carp_provider_offering *o = NULL;
  size_t n = pve_offerings(&w->pp, s, &s->types[0], &o), i, found = 0;
  for (i = 0; i < n; i++)
    if (!strcmp(o[i].zone, zone) && o[i].available)
      found++;
  carp_free(o);
  return found;
}

static void test_placement_skips_offline_and_maintenance(void **state)
{
  struct world w;
  struct pve_vm_spec s;
  struct pve_type t;
  struct pve_choice ch;
  char msg[512];
  (void)state;
  world_init(&w);
  spec_init(&s, &t);
  host(&w, 0, PVE_HOST_OFFLINE, 0);
  host(&w, 1, PVE_HOST_ONLINE, 1);
  assert_int_equal(
      pve_place(&w.pp, &s, NULL, NULL, NULL, &ch, msg, sizeof(msg)), 0);
  assert_string_equal(ch.host->name, "pve3");
  assert_int_equal(offered(&w, &s, "pve1"), 0);
  assert_int_equal(offered(&w, &s, "pve2"), 0);
  assert_int_equal(offered(&w, &s, "pve3"), 1);
  assert_false(pve_host_usable(&w.r, &s, &w.hosts[1]));
  /* The zone asked for is out: not a capacity problem, nothing cached. */
  assert_int_equal(
      pve_place(&w.pp, &s, NULL, "pve2", NULL, &ch, msg, sizeof(msg)),
      CARP_ENODECLASS_NOT_READY);
  assert_non_null(strstr(msg, "out of maintenance"));
  assert_false(pve_ice_has(&w.pp, t.name, "lab", "pve2"));
  /* Every host out. */
  host(&w, 2, PVE_HOST_ONLINE, 1);
  assert_int_equal(
      pve_place(&w.pp, &s, NULL, NULL, NULL, &ch, msg, sizeof(msg)),
      CARP_ENODECLASS_NOT_READY);
  /* Back: used again. */
  host(&w, 0, PVE_HOST_ONLINE, 0);
  host(&w, 1, PVE_HOST_ONLINE, 0);
  assert_int_equal(
      pve_place(&w.pp, &s, NULL, NULL, NULL, &ch, msg, sizeof(msg)), 0);
  assert_int_equal(offered(&w, &s, "pve1"), 1);
  assert_int_equal(offered(&w, &s, "pve2"), 1);
  assert_int_equal(offered(&w, &s, "pve3"), 0);
  world_free(&w);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ha_maintenance_parse),
      cmocka_unit_test(test_states_and_since),
      cmocka_unit_test(test_ha_status_applied_without_hastate),
      cmocka_unit_test(test_placement_skips_offline_and_maintenance),
  };
  carp_log_set_level(CARP_LOG_ERROR);
  return cmocka_run_group_tests(tests, NULL, NULL);
}
