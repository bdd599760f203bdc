/* Unit tests of host devices in the Proxmox provider (devices.c and their
 * use in instancetypes.c): reading /cluster/mapping answers and VM configs,
 * how many devices of a mapping each host has free (running VMs through
 * the mapping or as a raw device, stopped and deleted VMs, creates in
 * flight), and placement: a VM with devices goes only to a host with
 * enough free, whatever the strategy prefers; none free anywhere is an
 * insufficient-capacity result that names the mapping and is cached; the
 * offerings say the same. The provider and its inventory are built by
 * hand, as a refresh would leave them. */
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
#include "carpenter/map.h"
#include "carpenter/nodeclass.h"
#include "carpenter/timeutil.h"
#include "pve_int.h"

#define GiB (1024LL * 1024 * 1024)

static yajl_val json(const char *text)
{
  yajl_val v = NULL;
  char *err = NULL;
  if (carp_json_parse(text, strlen(text), &v, &err)) {
    fprintf(stderr, "%s\n", err);
    fail();
  }
  return v;
}

static void test_parse(void **state)
{
  struct pve_mapping *m;
  struct pve_devref *refs;
  size_t n;
  yajl_val v = json(
      "[{\"id\":\"gpu\",\"map\":[\"node=pve1,path=0000:01:00.0,id=10de:2684,"
      "iommugroup=11\",\"node=pve1,path=0000:02:00.0,id=10de:2684\","
      "\"node=pve2,path=0000:01:00,id=10de:2684\"],\"description\":\"\"},"
      "{\"map\":[\"node=pve1,path=0000:05:00.0\"]},"
      "{\"id\":\"empty\",\"map\":[]}]");
  (void)state;
  assert_int_equal(pve_mappings_parse(v, 0, &m, &n), 0);
  assert_int_equal(n, 2); /* the entry without an id is skipped */
  assert_string_equal(m[0].id, "gpu");
  assert_int_equal(m[0].ndevs, 3);
  assert_string_equal(m[0].devs[1].host, "pve1");
  assert_string_equal(m[0].devs[1].path, "0000:02:00.0");
  assert_string_equal(m[0].devs[2].id, "10de:2684");
  assert_int_equal(m[1].ndevs, 0);
  pve_mappings_free(m, n);
  carp_json_free(v);
  v = json("{\"data\":1}");
  assert_int_equal(pve_mappings_parse(v, 0, &m, &n), CARP_EPARSE);
  carp_json_free(v);

  v = json("{\"hostpci0\":\"mapping=gpu,pcie=1\",\"hostpci1\":\"0000:03:00.0,"
           "pcie=1\",\"hostpci2\":\"host=04:00.0\",\"hostpci3\":\"pcie=1\","
           "\"usb0\":\"mapping=zigbee\",\"usb1\":\"spice\",\"usb2\":"
           "\"host=10c4:ea60,usb3=1\",\"hostpcix\":\"mapping=no\","
           "\"net0\":\"virtio=BC:24:11:00:00:01,bridge=vmbr0\"}");
  n = pve_config_devrefs(v, &refs);
  assert_int_equal(n, 5);
  assert_string_equal(refs[0].mapping, "gpu");
  assert_false(refs[0].usb);
  assert_string_equal(refs[1].path, "0000:03:00.0");
  assert_string_equal(refs[2].path, "04:00.0");
  assert_string_equal(refs[3].mapping, "zigbee");
  assert_true(refs[3].usb);
  assert_string_equal(refs[4].path, "10c4:ea60");
  carp_free(refs);
  carp_json_free(v);
}

/* --- a provider by hand ----------------------------------------------------
 */

struct world {
  struct pve_provider pp;
  struct pve_region r;
  struct pve_vm_spec spec;
};

static void add_guest(struct world *w, int64_t vmid, const char *node,
                      const char *status, int tmpl)
{
  struct pve_inventory *inv = &w->r.inv;
  struct pve_guest *g;
  inv->guests =
      carp_reallocarray(inv->guests, inv->nguests + 1, sizeof(*inv->guests));
  g = &inv->guests[inv->nguests++];
  memset(g, 0, sizeof(*g));
  g->vmid = vmid;
  snprintf(g->node, sizeof(g->node), "%s", node);
  snprintf(g->status, sizeof(g->status), "%s", status);
  snprintf(g->name, sizeof(g->name), "%s", tmpl ? "k3s" : "vm");
  g->template_ = tmpl;
  g->maxcpu = tmpl ? 0 : 2;
  g->maxmem = tmpl ? 0 : 2 * GiB;
  g->uptime = 100;
}

static void set_status(struct world *w, int64_t vmid, const char *status)
{
  size_t i;
  for (i = 0; i < w->r.inv.nguests; i++)
    if (w->r.inv.guests[i].vmid == vmid)
      snprintf(w->r.inv.guests[i].status, sizeof(w->r.inv.guests[i].status),
               "%s", status);
}

/* The devices a running VM's config names, as a refresh records them. */
static void vm_uses(struct world *w, int64_t vmid, const char *node,
                    const char *mapping, const char *raw)
{
  struct pve_vmdevs *vd;
  w->r.vmdevs =
      carp_reallocarray(w->r.vmdevs, w->r.nvmdevs + 1, sizeof(*w->r.vmdevs));
  vd = &w->r.vmdevs[w->r.nvmdevs++];
  memset(vd, 0, sizeof(*vd));
  vd->vmid = vmid;
  snprintf(vd->node, sizeof(vd->node), "%s", node);
  vd->refs = carp_calloc(1, sizeof(*vd->refs));
  vd->nrefs = 1;
  snprintf(vd->refs[0].mapping, sizeof(vd->refs[0].mapping), "%s",
           mapping ? mapping : "");
  snprintf(vd->refs[0].path, sizeof(vd->refs[0].path), "%s", raw ? raw : "");
}

static void setup_world(struct world *w)
{
  static const char *const hosts[] = {"pve1", "pve2", "pve3"};
  yajl_val v;
  size_t i;
  memset(w, 0, sizeof(*w));
  carp_map_init(&w->pp.ice);
  w->pp.o.ice_ttl_ms = 60000;
  snprintf(w->pp.cluster, sizeof(w->pp.cluster), "test");
  snprintf(w->pp.cluster_tag, sizeof(w->pp.cluster_tag), "carpenter-test");
  w->pp.regions = &w->r;
  w->pp.nregions = 1;
  w->r.pp = &w->pp;
  snprintf(w->r.name, sizeof(w->r.name), "lab");
  w->r.inv.fetched_ms = carp_time_mono_ms();
  w->r.inv.hosts = carp_calloc(3, sizeof(*w->r.inv.hosts));
  w->r.inv.nhosts = 3;
  for (i = 0; i < 3; i++) {
    struct pve_host *h = &w->r.inv.hosts[i];
    snprintf(h->name, sizeof(h->name), "%s", hosts[i]);
    h->online = 1;
    h->maxcpu = 16;
    h->maxmem = 64 * GiB;
    add_guest(w, 9000 + (int64_t)i, hosts[i], "stopped", 1);
  }
  /* gpu: two devices on pve1, one on pve2, none on pve3 */
  v = json("[{\"id\":\"gpu\",\"map\":[\"node=pve1,path=0000:01:00.0\","
           "\"node=pve1,path=0000:02:00.0\",\"node=pve2,path=0000:01:00\"]}]");
  assert_int_equal(pve_mappings_parse(v, 0, &w->r.maps, &w->r.nmaps), 0);
  carp_json_free(v);
  w->r.maps_read = 1;

  w->spec.tmpl_name = carp_strdup("k3s");
  w->spec.cpu_over = 100;
  w->spec.mem_over = 100;
  w->spec.reserved_mem = 2 * GiB;
  w->spec.placement = CARP_PLACEMENT_SPREAD;
  w->spec.types = carp_calloc(1, sizeof(*w->spec.types));
  w->spec.ntypes = 1;
  snprintf(w->spec.types[0].name, sizeof(w->spec.types[0].name),
           "g1.4VCPU-16GB");
  w->spec.types[0].cpu = 4;
  w->spec.types[0].memory = 16 * GiB;
  w->spec.types[0].ndevs = 1;
  snprintf(w->spec.types[0].devs[0].mapping,
           sizeof(w->spec.types[0].devs[0].mapping), "gpu");
  w->spec.types[0].devs[0].count = 1;
}

static void teardown_world(struct world *w)
{
  struct carp_map_iter it;
  const char *k;
  size_t kl;
  void *v;
  while (w->r.holds)
    pve_hold_release(&w->r, w->r.holds);
  pve_devices_free(&w->r);
  pve_inventory_free(&w->r.inv);
  carp_free(w->r.gone);
  carp_map_iter_init(&it);
  while (carp_map_next(&w->pp.ice, &it, &k, &kl, &v))
    carp_free(v);
  carp_map_free(&w->pp.ice);
  pve_vm_spec_free(&w->spec);
}

static void test_free_devices(void **state)
{
  struct world w;
  struct pve_hold *h;
  int32_t total;
  (void)state;
  setup_world(&w);
  assert_int_equal(pve_devices_free_on(&w.r, "pve1", "gpu", 0, &total), 2);
  assert_int_equal(total, 2);
  assert_int_equal(pve_devices_free_on(&w.r, "pve3", "gpu", 0, &total), 0);
  assert_int_equal(total, 0);
  assert_int_equal(pve_devices_free_on(&w.r, "pve1", "nosuch", 0, &total), -1);
  assert_int_equal(pve_devices_free_on(&w.r, "pve1", "gpu", 1, NULL), -1);

  /* a running VM through the mapping holds one */
  add_guest(&w, 101, "pve1", "running", 0);
  vm_uses(&w, 101, "pve1", "gpu", NULL);
  assert_int_equal(pve_devices_free_on(&w.r, "pve1", "gpu", 0, NULL), 1);
  /* a raw device that is one of the entries holds it too (short form) */
  add_guest(&w, 102, "pve1", "running", 0);
  vm_uses(&w, 102, "pve1", NULL, "02:00.0");
  assert_int_equal(pve_devices_free_on(&w.r, "pve1", "gpu", 0, NULL), 0);
  /* a function of a whole-device entry on pve2 */
  add_guest(&w, 103, "pve2", "running", 0);
  vm_uses(&w, 103, "pve2", NULL, "0000:01:00.1");
  assert_int_equal(pve_devices_free_on(&w.r, "pve2", "gpu", 0, NULL), 0);
  /* a stopped VM holds nothing */
  set_status(&w, 103, "stopped");
  assert_int_equal(pve_devices_free_on(&w.r, "pve2", "gpu", 0, NULL), 1);
  /* a raw device that is no entry of the mapping holds nothing of it */
  add_guest(&w, 104, "pve2", "running", 0);
  vm_uses(&w, 104, "pve2", NULL, "0000:07:00.0");
  assert_int_equal(pve_devices_free_on(&w.r, "pve2", "gpu", 0, NULL), 1);
  /* a VM Carpenter deleted stops counting at once */
  w.r.gone = carp_calloc(1, sizeof(*w.r.gone));
  w.r.gone[0] = 101;
  w.r.ngone = 1;
  assert_int_equal(pve_devices_free_on(&w.r, "pve1", "gpu", 0, NULL), 1);
  /* a create in flight holds its devices */
  h = pve_hold_add(&w.r, "pve1", 4, 16 * GiB);
  h->devs[0] = w.spec.types[0].devs[0];
  h->ndevs = 1;
  assert_int_equal(pve_devices_free_on(&w.r, "pve1", "gpu", 0, NULL), 0);
  /* ...and while it holds, the VM's own config is not counted twice (102
   * is that create: its hold stands for its raw device) */
  h->vmid = 102;
  assert_int_equal(pve_devices_free_on(&w.r, "pve1", "gpu", 0, NULL), 1);
  h->vmid = 0;
  pve_hold_release(&w.r, h);
  assert_int_equal(pve_devices_free_on(&w.r, "pve1", "gpu", 0, NULL), 1);
  teardown_world(&w);
}

static void test_placement(void **state)
{
  struct world w;
  struct pve_choice ch;
  struct carp_provider_offering *off;
  char msg[512];
  size_t n, i;
  (void)state;
  setup_world(&w);
  /* Spread would pick pve1 (most free memory once pve2 runs something),
   * but pve1's devices are taken. */
  add_guest(&w, 101, "pve1", "running", 0);
  vm_uses(&w, 101, "pve1", "gpu", NULL);
  add_guest(&w, 102, "pve1", "running", 0);
  vm_uses(&w, 102, "pve1", "gpu", NULL);
  add_guest(&w, 103, "pve2", "running", 0);
  assert_int_equal(
      pve_place(&w.pp, &w.spec, NULL, NULL, NULL, &ch, msg, sizeof(msg)), 0);
  assert_string_equal(ch.host->name, "pve2");
  n = pve_offerings(&w.pp, &w.spec, &w.spec.types[0], &off);
  assert_int_equal(n, 3);
  for (i = 0; i < n; i++)
    assert_int_equal(off[i].available, !strcmp(off[i].zone, "pve2"));
  carp_free(off);

  /* the last device is being taken by a create in flight */
  {
    struct pve_hold *h = pve_hold_add(&w.r, "pve2", 4, 16 * GiB);
    h->devs[0] = w.spec.types[0].devs[0];
    h->ndevs = 1;
  }
  assert_int_equal(
      pve_place(&w.pp, &w.spec, NULL, NULL, NULL, &ch, msg, sizeof(msg)),
      CARP_EINSUFFICIENT_CAPACITY);
  assert_non_null(strstr(msg, "PCI mapping gpu has 0 of 2 devices free on "
                              "lab/pve1, g1.4VCPU-16GB needs 1"));
  /* cached as unavailable, like any full offering */
  assert_true(pve_ice_has(&w.pp, "g1.4VCPU-16GB", "lab", "pve2"));
  assert_true(pve_ice_has(&w.pp, "g1.4VCPU-16GB", "lab", "pve3"));

  /* a type without devices is not held back by them */
  w.spec.types[0].ndevs = 0;
  snprintf(w.spec.types[0].name, sizeof(w.spec.types[0].name), "c1.4VCPU");
  assert_int_equal(
      pve_place(&w.pp, &w.spec, NULL, NULL, NULL, &ch, msg, sizeof(msg)), 0);
  teardown_world(&w);
}

static void test_mapping_missing(void **state)
{
  struct world w;
  struct pve_choice ch;
  char msg[512];
  (void)state;
  setup_world(&w);
  snprintf(w.spec.types[0].devs[0].mapping,
           sizeof(w.spec.types[0].devs[0].mapping), "tpu");
  assert_int_equal(
      pve_place(&w.pp, &w.spec, NULL, NULL, NULL, &ch, msg, sizeof(msg)),
      CARP_EINSUFFICIENT_CAPACITY);
  assert_non_null(strstr(msg, "PCI mapping tpu not found in region lab"));
  assert_non_null(strstr(msg, "Mapping.Audit or Mapping.Use on "
                              "/mapping/pci/tpu"));
  /* two devices per VM: pve1 has two, pve2 one */
  snprintf(w.spec.types[0].devs[0].mapping,
           sizeof(w.spec.types[0].devs[0].mapping), "gpu");
  snprintf(w.spec.types[0].name, sizeof(w.spec.types[0].name), "g2");
  w.spec.types[0].devs[0].count = 2;
  assert_int_equal(
      pve_place(&w.pp, &w.spec, NULL, NULL, NULL, &ch, msg, sizeof(msg)), 0);
  assert_string_equal(ch.host->name, "pve1");
  teardown_world(&w);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse),
      cmocka_unit_test(test_free_devices),
      cmocka_unit_test(test_placement),
      cmocka_unit_test(test_mapping_missing),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
