/* Unit tests for ProxmoxNodeClass: every CEL rule and a sample of schema
 * rules table-driven, decoding with the CRD's defaults and of both
 * examples, the instance-type grid (names, memory, prices, custom types,
 * dedup), capacity and eviction thresholds, the drift hash (which fields
 * count, user-data in UserData mode) and the status patch round trip. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "api_testlib.h"
#include "carpenter/nodeclass.h"

#define GiB   (1024LL * 1024 * 1024)
#define MiB   (1024LL * 1024)
#define NC(S) "metadata: {name: n}\nspec: {template: {name: k3s-agent}" S "}\n"

static void test_validation(void **state)
{
  static const struct {
    const char *yaml, *want;
  } cases[] = {
      {NC(""), NULL},
      {"metadata: {name: n}\nspec: {regions: [homelab]}\n",
       "spec.template: Required value"},
      {"metadata: {name: n}\nspec: {template: {scope: PerHost}}\n",
       "spec.template: Invalid value: \"object\": template.name or "
       "template.tags must be set"},
      {"metadata: {name: n}\nspec: {template: {tags: []}}\n",
       "template.name or template.tags must be set"},
      {"metadata: {name: n}\nspec: {template: {tags: [debian-12]}}\n", NULL},
      {"metadata: {name: n}\nspec: {template: {tags: [Debian]}}\n",
       "spec.template.tags[0]: Invalid value: \"Debian\": should match"},
      {"metadata: {name: n}\nspec: {template: {tags: [a, a]}}\n",
       "spec.template.tags[1]: Duplicate value: \"a\""},
      {NC(", clone: {mode: Copy}"),
       "spec.clone.mode: Unsupported value: \"Copy\": supported values: "
       "\"Linked\", \"Full\""},
      {NC(", clone: {mode: Linked, storage: local-lvm}"),
       "spec.clone: Invalid value: \"object\": clone.storage and clone.format "
       "are only allowed with mode Full (Proxmox refuses them for linked "
       "clones)"},
      {NC(", clone: {format: qcow2}"),
       "clone.storage and clone.format are only allowed with mode Full"},
      {NC(", clone: {mode: Full, storage: ceph-vm, format: raw, "
          "maxConcurrentFullClones: 16}"),
       NULL},
      {NC(", clone: {mode: Full, maxConcurrentFullClones: 17}"),
       "spec.clone.maxConcurrentFullClones: Invalid value: 17: should be less "
       "than or equal to 16"},
      {NC(", vmidRange: {min: 300, max: 200}"),
       "spec.vmidRange: Invalid value: \"object\": vmidRange.min must be less "
       "than or equal to vmidRange.max"},
      {NC(", vmidRange: {min: 99, max: 200}"),
       "spec.vmidRange.min: Invalid value: 99: should be greater than or "
       "equal to 100"},
      {NC(", vmidRange: {min: 200}"), "spec.vmidRange.max: Required value"},
      {NC(", tags: [carpenter]"),
       "spec.tags: Invalid value: \"array\": tags 'carpenter' and "
       "'carpenter-*' are reserved for Carpenter"},
      {NC(", tags: [k3s, carpenter-prod]"), "are reserved for Carpenter"},
      {NC(", tags: [carpentry]"), NULL},
      {NC(", bootstrap: {mode: UserData}"),
       "spec.bootstrap: Invalid value: \"object\": bootstrap.userDataSecretRef "
       "and bootstrap.isoStorage are required when mode is UserData"},
      {NC(", bootstrap: {mode: UserData, userDataSecretRef: {name: s, "
          "namespace: kube-system}}"),
       "are required when mode is UserData"},
      {NC(", bootstrap: {isoStorage: local}"),
       "spec.bootstrap: Invalid value: \"object\": bootstrap.userDataSecretRef "
       "and bootstrap.isoStorage are only allowed when mode is UserData"},
      {NC(", bootstrap: {mode: UserData, isoStorage: local, "
          "userDataSecretRef: {name: s, namespace: kube-system}}"),
       NULL},
      {NC(", bootstrap: {mode: UserData, isoStorage: local, "
          "userDataSecretRef: {name: s}}"),
       "spec.bootstrap.userDataSecretRef.namespace: Required value"},
      {NC(", cloudInit: {user: k3s}, bootstrap: {mode: UserData, isoStorage: "
          "local, userDataSecretRef: {name: s, namespace: n}}"),
       "+spec: Invalid value: \"object\": cloudInit.user and cloudInit.sshKeys "
       "apply to bootstrap mode Template only; with mode UserData put users "
       "and keys in the user-data"},
      {NC(", cloudInit: {user: k3s, sshKeys: ['ssh-ed25519 AAAA a@b']}"), NULL},
      {NC(", cloudInit: {sshKeys: ['not a key']}"),
       "spec.cloudInit.sshKeys[0]: Invalid value: \"not a key\": should match"},
      {NC(", cloudInit: {ipConfig: {ipv6: Static}}"),
       "spec.cloudInit.ipConfig.ipv6: Unsupported value: \"Static\""},
      {NC(", cloudInit: {nameservers: [1.1.1.1, 8.8.8.8, 9.9.9.9, 1.0.0.1]}"),
       "spec.cloudInit.nameservers: Too many: 4: must have at most 3 items"},
      {NC(", kubelet: {kubeReserved: {cpu: 100m, gpu: '1'}}"),
       "spec.kubelet.kubeReserved: Invalid value: \"object\": valid keys for "
       "kubeReserved are ['cpu','memory','ephemeral-storage','pid']"},
      {NC(", kubelet: {systemReserved: {disk: 1Gi}}"),
       "valid keys for systemReserved are "
       "['cpu','memory','ephemeral-storage','pid']"},
      {NC(", kubelet: {evictionHard: {memory.free: 1Gi}}"),
       "spec.kubelet.evictionHard: Invalid value: \"object\": valid keys for "
       "evictionHard are ['memory.available','nodefs.available',"
       "'nodefs.inodesFree','imagefs.available','imagefs.inodesFree','pid."
       "available']"},
      {NC(", kubelet: {evictionHard: {nodefs.available: 101%}}"),
       "spec.kubelet.evictionHard[nodefs.available]: Invalid value: "
       "\"101%\": should match"},
      {NC(", kubelet: {maxPods: 250, evictionHard: {nodefs.available: "
          "'12.5%', memory.available: 200Mi}}"),
       NULL},
      {NC(", kubelet: {maxPods: 0}"),
       "spec.kubelet.maxPods: Invalid value: 0: should be greater than or "
       "equal to 1"},
      {NC(", instanceTypes: {families: []}"),
       "spec.instanceTypes: Invalid value: \"object\": instanceTypes must "
       "define at least one family or custom instance type"},
      {NC(", instanceTypes: {families: [], custom: [{name: big, cpu: 4, "
          "memory: 8Gi}]}"),
       NULL},
      {NC(", instanceTypes: {custom: [{name: c1.big, cpu: 4, memory: 8Gi}]}"),
       "spec.instanceTypes: Invalid value: \"object\": custom instance type "
       "names must not start with a family name followed by '.'"},
      {NC(", instanceTypes: {families: [{name: x1, memoryPerCPU: 512Mi}], "
          "custom: [{name: c1.big, cpu: 4, memory: 8Gi}]}"),
       NULL},
      {NC(", instanceTypes: {families: [{name: c1, memoryPerCPU: 2Gi}, "
          "{name: c1, memoryPerCPU: 3Gi}]}"),
       "spec.instanceTypes.families[1]: Duplicate value: {\"name\":\"c1\"}"},
      {NC(", instanceTypes: {families: [{name: c1}]}"),
       "spec.instanceTypes.families[0].memoryPerCPU: Required value"},
      {NC(", instanceTypes: {families: [{name: c1, memoryPerCPU: 2G}]}"),
       "spec.instanceTypes.families[0].memoryPerCPU: Invalid value: \"2G\": "
       "should match '^[1-9][0-9]*(Mi|Gi)$'"},
      {NC(", instanceTypes: {sizes: [1, 1024]}"),
       "spec.instanceTypes.sizes[1]: Invalid value: 1024: should be less than "
       "or equal to 512"},
      {NC(", instanceTypes: {sizes: [2, 2]}"),
       "spec.instanceTypes.sizes[1]: Duplicate value: 2"},
      {NC(", instanceTypes: {custom: [{name: big, memory: 8Gi}]}"),
       "spec.instanceTypes.custom[0].cpu: Required value"},
      {NC(", instanceTypes: {custom: [{name: big, cpu: 2, memory: 8Gi, "
          "price: '1.5'}, {name: big, cpu: 4, memory: 8Gi}]}"),
       "spec.instanceTypes.custom[1]: Duplicate value: {\"name\":\"big\"}"},
      {NC(", instanceTypes: {vmMemoryOverhead: 50%}"),
       "spec.instanceTypes.vmMemoryOverhead: Invalid value: \"50%\": should "
       "match"},
      {NC(", pricing: {perCPU: '-0.5'}"),
       "spec.pricing.perCPU: Invalid value: \"-0.5\": should match "
       "'^[0-9]+(\\.[0-9]{1,9})?$'"},
      {NC(", pricing: {perGiB: '12345678901.5'}"),
       "spec.pricing.perGiB: Invalid value: \"12345678901.5\": price too "
       "large"},
      {NC(", pricing: {perCPU: '0.000000001', perGiB: '7'}"), NULL},
      {NC(", hostCapacity: {cpuOvercommitRatio: '17'}"),
       "spec.hostCapacity.cpuOvercommitRatio: Invalid value: \"17\": should "
       "match"},
      {NC(", hostCapacity: {memoryOvercommitRatio: '2.5'}"),
       "spec.hostCapacity.memoryOvercommitRatio: Invalid value: \"2.5\": "
       "should match"},
      {NC(", hostCapacity: {cpuOvercommitRatio: '4.25', "
          "memoryOvercommitRatio: '1.5', reservedMemory: 512Mi}"),
       NULL},
      {NC(", placementStrategy: RoundRobin"),
       "spec.placementStrategy: Unsupported value: \"RoundRobin\": supported "
       "values: \"Spread\", \"Pack\", \"LeastLoaded\""},
      {NC(", network: {interface: eth0}"),
       "spec.network.interface: Invalid value: \"eth0\": should match"},
      {NC(", network: {vlan: 4095}"),
       "spec.network.vlan: Invalid value: 4095: should be less than or equal "
       "to 4094"},
      {NC(", network: {firewall: 'yes'}"),
       "spec.network.firewall: Invalid value: \"string\": must be of type "
       "boolean"},
      {NC(", bootDisk: {size: 32G}"),
       "spec.bootDisk.size: Invalid value: \"32G\": should match"},
      {NC(", resourcePool: a/b/c/d"),
       "spec.resourcePool: Invalid value: \"a/b/c/d\": should match"},
      {NC(", regions: [a, a]"), "spec.regions[1]: Duplicate value: \"a\""},
      {NC(", zones: [pve_1]"),
       "spec.zones[0]: Invalid value: \"pve_1\": should match"},
  };
  size_t i;
  for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    yajl_val v = yaml_json(cases[i].yaml);
    char *reason = NULL;
    int rc = carp_nodeclass_validate(v, &reason);
    if (!cases[i].want) {
      if (rc)
        fprintf(stderr, "case %zu: %s\n", i, reason);
      assert_int_equal(rc, 0);
    } else {
      if (!rc)
        fprintf(stderr, "case %zu: want %s\n", i, cases[i].want);
      assert_int_equal(rc, CARP_EINVALID);
      assert_one_problem(reason, cases[i].want);
    }
    carp_free(reason);
    carp_json_free(v);
  }
}

static struct carp_nodeclass *class_of(const char *yaml)
{
  char *err = NULL;
  struct carp_objmeta *m = decode_yaml(&carp_kind_proxmoxnodeclass, yaml, &err);
  if (!m)
    fprintf(stderr, "%s\n", err);
  assert_non_null(m);
  return (struct carp_nodeclass *)m;
}

/* Device classes: every rule of spec.devices and the device lists of
 * instance types, the defaults, and what a type carrying devices is
 * (price, capacity of the extended resource, GPU labels). */
#define DEV(S)                                                                 \
  NC(", devices: [{name: rtx, mapping: rtx4090, resource: nvidia.com/gpu" S    \
     "}]")
#define GPUS(D, T) NC(", devices: [" D "], instanceTypes: {families: [" T "]}")

static void test_device_validation(void **state)
{
  static const struct {
    const char *yaml, *want;
  } cases[] = {
      {DEV(""), NULL},
      {DEV(", type: USB"), NULL},
      {DEV(", type: SATA"), "spec.devices[0].type: Unsupported value: "
                            "\"SATA\": supported values: \"PCI\", \"USB\""},
      {NC(", devices: [{name: rtx, resource: nvidia.com/gpu}]"),
       "spec.devices[0].mapping: Required value"},
      {NC(", devices: [{name: rtx, mapping: rtx}]"),
       "spec.devices[0].resource: Required value"},
      {DEV(", count: 9"), "spec.devices[0].count: Invalid value: 9: should be "
                          "less than or equal to 8"},
      {DEV(", count: 0"), "spec.devices[0].count: Invalid value: 0: should be "
                          "greater than or equal to 1"},
      {NC(", devices: [{name: Rtx, mapping: rtx, resource: a.b/c}]"),
       "spec.devices[0].name: Invalid value: \"Rtx\": should match"},
      {NC(", devices: [{name: rtx, mapping: 'rtx 4090', resource: a.b/c}]"),
       "spec.devices[0].mapping: Invalid value: \"rtx 4090\": should match"},
      {NC(", devices: [{name: rtx, mapping: rtx, resource: gpu}]"),
       "spec.devices[0].resource: Invalid value: \"gpu\": should match"},
      {NC(", devices: [{name: rtx, mapping: rtx, resource: "
          "kubernetes.io/gpu}]"),
       "spec.devices[0].resource: Invalid value: \"string\": resource must be "
       "an extended resource outside the kubernetes.io domain, for example "
       "nvidia.com/gpu"},
      {DEV(", price: '1.5'"), NULL},
      {DEV(", price: '-1'"),
       "spec.devices[0].price: Invalid value: \"-1\": should match"},
      {DEV(", pcie: false, gpu: {name: rtx-4090, manufacturer: nvidia, "
           "memory: 24Gi}"),
       NULL},
      {DEV(", type: USB, pcie: true"),
       "spec.devices[0]: Invalid value: \"object\": pcie applies to PCI "
       "devices only"},
      {DEV(", type: USB, gpu: {name: x}"),
       "spec.devices[0]: Invalid value: \"object\": gpu applies to PCI "
       "devices only"},
      {DEV(", gpu: {name: 'RTX 4090'}"),
       "spec.devices[0].gpu.name: Invalid value: \"RTX 4090\": should match"},
      {DEV(", gpu: {memory: 24G}"),
       "spec.devices[0].gpu.memory: Invalid value: \"24G\": should match"},
      {NC(", devices: [{name: a, mapping: mm, resource: x.io/a}, {name: a, "
          "mapping: nn, resource: x.io/b}]"),
       "spec.devices[1]: Duplicate value: {\"name\":\"a\"}"},
      {GPUS("{name: a, mapping: mm, resource: x.io/a}",
            "{name: g1, memoryPerCPU: 4Gi, devices: [a]}"),
       NULL},
      {GPUS("{name: a, mapping: mm, resource: x.io/a}",
            "{name: g1, memoryPerCPU: 4Gi, devices: [b]}"),
       "spec: Invalid value: \"object\": instanceTypes devices must name an "
       "entry of spec.devices"},
      {NC(", instanceTypes: {custom: [{name: big, cpu: 2, memory: 4Gi, "
          "devices: [a]}]}"),
       "instanceTypes devices must name an entry of spec.devices"},
      {GPUS("{name: a, mapping: mm, resource: x.io/a}",
            "{name: g1, memoryPerCPU: 4Gi, devices: [a, a]}"),
       "spec.instanceTypes.families[0].devices[1]: Duplicate value: \"a\""},
      {GPUS("{name: a, mapping: mm, resource: x.io/a, gpu: {}}, {name: b, "
            "mapping: nn, resource: x.io/b, gpu: {}}",
            "{name: g1, memoryPerCPU: 4Gi, devices: [a, b]}"),
       "spec: Invalid value: \"object\": an instance type may carry at most "
       "one device class with gpu set"},
      {GPUS("{name: a, mapping: mm, resource: x.io/a, gpu: {}}, {name: b, "
            "type: USB, mapping: nn, resource: x.io/b}",
            "{name: g1, memoryPerCPU: 4Gi, devices: [a, b]}"),
       NULL},
  };
  size_t i;
  for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    yajl_val v = yaml_json(cases[i].yaml);
    char *reason = NULL;
    int rc = carp_nodeclass_validate(v, &reason);
    if (!cases[i].want) {
      if (rc)
        fprintf(stderr, "case %zu: %s\n", i, reason);
      assert_int_equal(rc, 0);
    } else {
      if (!rc)
        fprintf(stderr, "case %zu: want %s\n", i, cases[i].want);
      assert_int_equal(rc, CARP_EINVALID);
      assert_one_problem(reason, cases[i].want);
    }
    carp_free(reason);
    carp_json_free(v);
  }
}

static void test_device_types(void **state)
{
  struct carp_nodeclass *nc = class_of(
      NC(", devices: [{name: rtx, mapping: rtx4090, resource: nvidia.com/gpu, "
         "count: 2, price: '0.5', gpu: {name: rtx-4090, manufacturer: nvidia, "
         "memory: 24Gi}}, {name: zb, type: USB, mapping: zigbee, resource: "
         "example.com/zigbee}], instanceTypes: {families: [{name: c1, "
         "memoryPerCPU: 2Gi}, {name: g1, memoryPerCPU: 4Gi, sizes: [4], "
         "devices: [rtx, zb]}], sizes: [2], custom: [{name: iot, cpu: 1, "
         "memory: 1Gi, devices: [zb]}, {name: fixed, cpu: 1, memory: 1Gi, "
         "price: '2', devices: [rtx]}]}"));
  const struct carp_nodeclass_spec *s = &nc->spec;
  struct carp_instance_type *t;
  struct carp_resources cap;
  struct carp_instance_gpu g;
  size_t n;

  assert_true(nc->valid);
  assert_int_equal(s->ndevices, 2);
  assert_int_equal(s->devices[0].type, CARP_DEVICE_PCI);
  assert_true(s->devices[0].pcie); /* default for PCI */
  assert_int_equal(s->devices[0].count, 2);
  assert_int_equal(s->devices[0].price_nano, 500000000);
  assert_int_equal(s->devices[0].gpu_memory, 24 * GiB);
  assert_int_equal(s->devices[1].type, CARP_DEVICE_USB);
  assert_false(s->devices[1].pcie);
  assert_int_equal(s->devices[1].count, 1);
  assert_false(s->devices[1].gpu);

  assert_int_equal(carp_nodeclass_instance_types(s, &t, &n), 0);
  assert_int_equal(n, 4);
  assert_string_equal(t[0].name, "c1.2VCPU-4GB");
  assert_int_equal(t[0].devices, 0);
  assert_string_equal(t[1].name, "g1.4VCPU-16GB");
  assert_int_equal(t[1].devices, 3);
  /* 4 x 0.03 + 16 x 0.004 + 2 GPUs x 0.5 (the USB stick is free) */
  assert_int_equal(t[1].price_nano, 120000000 + 64000000 + 1000000000);
  assert_string_equal(t[2].name, "iot");
  assert_int_equal(t[2].devices, 2);
  assert_int_equal(t[3].price_nano, 2000000000); /* its own price wins */

  carp_nodeclass_capacity(s, &t[1], 0, &cap);
  assert_int_equal(cap.nextended, 2);
  assert_int_equal(carp_resources_get(&cap, "nvidia.com/gpu"), 2);
  assert_int_equal(carp_resources_get(&cap, "example.com/zigbee"), 1);
  carp_resources_cleanup(&cap);
  carp_nodeclass_capacity(s, &t[0], 0, &cap);
  assert_int_equal(cap.nextended, 0);
  carp_resources_cleanup(&cap);

  carp_instance_type_gpu(s, &t[1], &g);
  assert_int_equal(g.count, 2);
  assert_string_equal(g.name, "rtx-4090");
  assert_string_equal(g.manufacturer, "nvidia");
  assert_int_equal(g.memory, 24 * GiB);
  carp_instance_type_gpu(s, &t[2], &g);
  assert_int_equal(g.count, 0); /* a USB stick is no GPU */
  assert_null(g.name);
  carp_free(t);
  carp_obj_unref(&nc->meta);
}

static struct carp_nodeclass *class_file(const char *rel)
{
  char path[1024];
  char *text;
  struct carp_nodeclass *nc;
  source_path(path, sizeof(path), rel);
  text = read_text(path);
  nc = class_of(text);
  carp_free(text);
  return nc;
}

static void test_defaults(void **state)
{
  struct carp_nodeclass *nc = class_of(NC(""));
  const struct carp_nodeclass_spec *s = &nc->spec;
  assert_true(nc->valid);
  assert_ptr_equal(nc->meta.kind, &carp_kind_proxmoxnodeclass);
  assert_int_equal(s->regions.n, 0);
  assert_string_equal(s->template_name, "k3s-agent");
  assert_int_equal(s->template_scope, CARP_SCOPE_PER_HOST);
  assert_int_equal(s->clone_mode, CARP_CLONE_LINKED);
  assert_null(s->clone_storage);
  assert_int_equal(s->clone_format, CARP_FORMAT_DEFAULT);
  assert_int_equal(s->max_concurrent_full_clones, 1);
  assert_false(s->has_vmid_range);
  assert_int_equal(s->boot_disk_size, 0);
  assert_false(s->has_network);
  assert_string_equal(s->net_interface, "net0");
  assert_int_equal(s->net_firewall, -1);
  assert_int_equal(s->ci_ipv4, CARP_IPV4_DHCP);
  assert_int_equal(s->ci_ipv6, CARP_IPV6_NONE);
  assert_false(s->ci_upgrade_packages);
  assert_int_equal(s->bootstrap_mode, CARP_BOOTSTRAP_TEMPLATE);
  assert_string_equal(s->userdata_secret_key, "user-data");
  assert_int_equal(s->max_pods, 110);
  assert_true(s->eviction_hard_defaulted);
  assert_true(s->eviction_hard[CARP_EVICT_MEMORY_AVAILABLE].set);
  assert_int_equal(s->eviction_hard[CARP_EVICT_MEMORY_AVAILABLE].value,
                   100 * MiB);
  assert_true(s->eviction_hard[CARP_EVICT_NODEFS_AVAILABLE].percent);
  assert_int_equal(s->eviction_hard[CARP_EVICT_NODEFS_AVAILABLE].value, 1000);
  assert_int_equal(s->eviction_hard[CARP_EVICT_IMAGEFS_AVAILABLE].value, 1500);
  assert_int_equal(s->eviction_hard[CARP_EVICT_NODEFS_INODES_FREE].value, 500);
  assert_false(s->eviction_hard[CARP_EVICT_PID_AVAILABLE].set);
  assert_int_equal(s->nfamilies, 3);
  assert_string_equal(s->families[0].name, "c1");
  assert_int_equal(s->families[2].memory_per_cpu, 8 * GiB);
  assert_int_equal(s->nsizes, 5);
  assert_int_equal(s->sizes[4], 16);
  assert_int_equal(s->vm_memory_overhead, 750);
  assert_int_equal(s->price_per_cpu_nano, 30000000);
  assert_int_equal(s->price_per_gib_nano, 4000000);
  assert_int_equal(s->cpu_overcommit, 100);
  assert_int_equal(s->memory_overcommit, 100);
  assert_int_equal(s->reserved_memory, 2 * GiB);
  assert_int_equal(s->placement, CARP_PLACEMENT_SPREAD);
  carp_obj_unref(&nc->meta);
}

static void test_examples(void **state)
{
  struct carp_nodeclass *nc = class_file("crds/examples/proxmoxnodeclass.yaml");
  const struct carp_nodeclass_spec *s = &nc->spec;
  assert_true(nc->valid);
  assert_int_equal(s->regions.n, 1);
  assert_string_equal(s->regions.v[0], "homelab");
  assert_int_equal(s->zones.n, 3);
  assert_string_equal(s->resource_pool, "k8s-nodes");
  assert_int_equal(s->boot_disk_size, 32 * GiB);
  assert_string_equal(s->cpu_type, "x86-64-v2-AES");
  assert_true(s->has_network);
  assert_string_equal(s->net_bridge, "vmbr0");
  assert_int_equal(s->net_firewall, 1);
  assert_int_equal(s->tags.n, 2);
  assert_string_equal(s->ci_user, "k3s");
  assert_int_equal(s->ci_ssh_keys.n, 1);
  assert_int_equal(s->kube_reserved.cpu, 100);
  assert_int_equal(s->kube_reserved.memory, 256 * MiB);
  assert_int_equal(s->system_reserved.memory, 256 * MiB);
  assert_false(s->eviction_hard_defaulted);
  assert_false(s->eviction_hard[CARP_EVICT_IMAGEFS_AVAILABLE].set);
  assert_int_equal(s->nfamilies, 2);
  assert_int_equal(s->nsizes, 3);
  assert_int_equal(s->cpu_overcommit, 200);
  assert_int_equal(s->reserved_memory, 4 * GiB);
  carp_obj_unref(&nc->meta);

  nc = class_file("crds/examples/proxmoxnodeclass-userdata.yaml");
  s = &nc->spec;
  assert_true(nc->valid);
  assert_null(s->template_name);
  assert_int_equal(s->template_tags.n, 2);
  assert_int_equal(s->template_scope, CARP_SCOPE_SHARED);
  assert_int_equal(s->clone_mode, CARP_CLONE_FULL);
  assert_string_equal(s->clone_storage, "ceph-vm");
  assert_int_equal(s->max_concurrent_full_clones, 2);
  assert_true(s->has_vmid_range);
  assert_int_equal(s->vmid_min, 20000);
  assert_int_equal(s->vmid_max, 29999);
  assert_int_equal(s->net_vlan, 30);
  assert_int_equal(s->ci_ipv6, CARP_IPV6_SLAAC);
  assert_int_equal(s->bootstrap_mode, CARP_BOOTSTRAP_USERDATA);
  assert_string_equal(s->userdata_secret_name, "carpenter-userdata");
  assert_string_equal(s->userdata_secret_namespace, "kube-system");
  assert_string_equal(s->iso_storage, "local");
  assert_int_equal(s->nfamilies, 3); /* defaulted */
  assert_int_equal(s->ncustom, 1);
  assert_string_equal(s->custom[0].family, "db");
  assert_int_equal(s->custom[0].price_nano, 600000000);
  assert_int_equal(s->placement, CARP_PLACEMENT_LEAST_LOADED);
  carp_obj_unref(&nc->meta);
}

static void test_instance_types(void **state)
{
  struct carp_nodeclass *nc = class_of(NC(""));
  struct carp_instance_type *t;
  size_t n, i;
  char name[96];

  assert_int_equal(carp_nodeclass_instance_types(&nc->spec, &t, &n), 0);
  assert_int_equal(n, 15);
  assert_string_equal(t[0].name, "c1.1VCPU-2GB");
  assert_string_equal(t[14].name, "m1.16VCPU-128GB");
  for (i = 0; i < n; i++) {
    if (!strcmp(t[i].name, "s1.2VCPU-8GB")) {
      assert_int_equal(t[i].cpu, 2);
      assert_int_equal(t[i].memory, 8 * GiB);
      assert_int_equal(t[i].price_nano, 92000000); /* docs: 0.092 */
      assert_true(t[i].price > 0.0919 && t[i].price < 0.0921);
      assert_string_equal(t[i].family, "s1");
      assert_false(t[i].custom);
    }
  }
  carp_free(t);
  carp_obj_unref(&nc->meta);

  nc = class_of(NC(", instanceTypes: {families: [{name: x1, memoryPerCPU: "
                   "512Mi, sizes: [3, 1]}, {name: c1, memoryPerCPU: 2Gi}], "
                   "sizes: [4], custom: [{name: db-12cpu-48gi, family: db, "
                   "cpu: 12, memory: 48Gi, price: '0.60'}, {name: tiny, cpu: "
                   "1, memory: 1536Mi}]}, pricing: {perCPU: '0.01', perGiB: "
                   "'0.002'}"));
  assert_true(nc->valid);
  assert_int_equal(carp_nodeclass_instance_types(&nc->spec, &t, &n), 0);
  assert_int_equal(n, 5);
  assert_string_equal(t[0].name, "x1.1VCPU-0.5GB");
  assert_int_equal(t[0].memory, 512 * MiB);
  assert_int_equal(t[0].price_nano, 10000000 + 1000000);
  assert_string_equal(t[1].name, "x1.3VCPU-1.5GB");
  assert_string_equal(t[2].name, "c1.4VCPU-8GB");
  assert_string_equal(t[3].name, "db-12cpu-48gi");
  assert_string_equal(t[3].family, "db");
  assert_int_equal(t[3].price_nano, 600000000);
  assert_true(t[3].custom);
  assert_string_equal(t[4].name, "tiny");
  assert_string_equal(t[4].family, "custom");
  assert_int_equal(t[4].price_nano, 10000000 + 3000000);
  carp_free(t);
  carp_obj_unref(&nc->meta);

  carp_instance_type_name("m9", 3, 100 * MiB * 3, name);
  assert_string_equal(name, "m9.3VCPU-0.29296875GB");
  carp_instance_type_name("s1", 16, 64 * GiB, name);
  assert_string_equal(name, "s1.16VCPU-64GB");
}

static void test_capacity(void **state)
{
  struct carp_nodeclass *nc = class_of(NC(", bootDisk: {size: 40Gi}, "
                                          "kubelet: {maxPods: 50, "
                                          "evictionHard: {memory.available: "
                                          "'5%', nodefs.available: 1Gi}}"));
  struct carp_instance_type it;
  struct carp_resources cap, ev;
  char price[32];

  memset(&it, 0, sizeof(it));
  it.cpu = 2;
  it.memory = 8 * GiB;
  carp_nodeclass_capacity(&nc->spec, &it, 10 * GiB, &cap);
  assert_int_equal(cap.cpu, 2000);
  assert_int_equal(cap.memory, 8 * GiB * 9250 / 10000);
  assert_int_equal(cap.ephemeral, 40 * GiB);
  assert_int_equal(cap.pods, 50);
  carp_nodeclass_eviction_threshold(&nc->spec, &cap, &ev);
  assert_int_equal(ev.memory, (cap.memory * 5 + 99) / 100);
  assert_int_equal(ev.ephemeral, GiB);
  carp_obj_unref(&nc->meta);

  nc = class_of(NC(""));
  carp_nodeclass_capacity(&nc->spec, &it, 10 * GiB, &cap);
  assert_int_equal(cap.ephemeral, 10 * GiB); /* the template's */
  carp_nodeclass_eviction_threshold(&nc->spec, &cap, &ev);
  assert_int_equal(ev.memory, 100 * MiB);
  assert_int_equal(ev.ephemeral, GiB); /* 10% */
  carp_obj_unref(&nc->meta);

  carp_price_format(92000000, price);
  assert_string_equal(price, "0.092");
  carp_price_format(2000000000, price);
  assert_string_equal(price, "2");
  carp_price_format(1, price);
  assert_string_equal(price, "0.000000001");
}

static const char *hash(const char *spec, const char *userdata,
                        char out[CARP_HASH_LEN])
{
  struct carp_nodeclass *nc = class_of(spec);
  carp_nodeclass_hash(&nc->spec, userdata, userdata ? strlen(userdata) : 0,
                      out);
  carp_obj_unref(&nc->meta);
  return out;
}

static void test_hash(void **state)
{
  char base[CARP_HASH_LEN], h[CARP_HASH_LEN];
  static const char *const same[] = {
      /* defaults written out */
      NC(", clone: {mode: Linked}, bootstrap: {mode: Template}, kubelet: "
         "{maxPods: 110}"),
      /* fields that do not need a new VM */
      NC(", regions: [a], zones: [b], resourcePool: p, vmidRange: {min: 100, "
         "max: 200}, tags: [t], instanceTypes: {sizes: [2]}, pricing: {perCPU: "
         "'1'}, hostCapacity: {cpuOvercommitRatio: '2'}, placementStrategy: "
         "Pack"),
      NC(", clone: {maxConcurrentFullClones: 3}"),
  };
  static const char *const differ[] = {
      "metadata: {name: n}\nspec: {template: {name: k3s-agent-2}}\n",
      "metadata: {name: n}\nspec: {template: {name: k3s-agent, scope: "
      "Shared}}\n",
      "metadata: {name: n}\nspec: {template: {name: k3s-agent, tags: [x]}}\n",
      NC(", clone: {mode: Full}"),
      NC(", bootDisk: {size: 40Gi}"),
      NC(", cpu: {type: host}"),
      NC(", network: {bridge: vmbr1}"),
      NC(", network: {}"),
      NC(", cloudInit: {upgradePackages: true}"),
      NC(", cloudInit: {nameservers: [1.1.1.1]}"),
      NC(", kubelet: {maxPods: 111}"),
      NC(", kubelet: {kubeReserved: {cpu: 100m}}"),
      NC(", kubelet: {evictionHard: {memory.available: 100Mi}}"),
  };
  size_t i;
  hash(NC(""), NULL, base);
  for (i = 0; i < sizeof(same) / sizeof(same[0]); i++)
    assert_string_equal(hash(same[i], NULL, h), base);
  for (i = 0; i < sizeof(differ) / sizeof(differ[0]); i++) {
    if (!strcmp(hash(differ[i], NULL, h), base))
      fprintf(stderr, "case %zu should change the hash\n", i);
    assert_string_not_equal(h, base);
  }
  /* Template tags are a set. */
  assert_string_equal(
      hash("metadata: {name: n}\nspec: {template: {tags: [a, b]}}\n", NULL,
           base),
      hash("metadata: {name: n}\nspec: {template: {tags: [b, a]}}\n", NULL, h));
  /* The user-data counts in UserData mode only. */
#define UD                                                                     \
  NC(", bootstrap: {mode: UserData, isoStorage: local, "                       \
     "userDataSecretRef: {name: s, namespace: n}}")
  hash(UD, "#cloud-config\n", base);
  assert_string_not_equal(hash(UD, "#cloud-config\nruncmd: []\n", h), base);
  assert_string_equal(hash(UD, "#cloud-config\n", h), base);
  hash(NC(""), "one", base);
  assert_string_equal(hash(NC(""), "two", h), base);
}

static void test_status(void **state)
{
  struct carp_nodeclass *nc = class_of(
      NC("") "status:\n  observedGeneration: 3\n  specHash: '123'\n"
             "  regions: [homelab]\n  zones: [pve1, pve2]\n"
             "  templates: [{region: homelab, zone: pve1, vmid: 9000, name: "
             "k3s-agent, node: pve1, storage: local-lvm, shared: false}]\n"
             "  instanceTypes: [{name: s1.2VCPU-8GB, family: s1, cpu: 2, "
             "memory: 8Gi, price: '0.092'}]\n"
             "  conditions: [{type: Ready, status: 'True', reason: Ready, "
             "message: '', lastTransitionTime: '2026-01-02T03:04:05Z'}]\n");
  struct carp_nodeclass_status st;
  struct carp_instance_type *t;
  size_t n;
  struct carp_buf b;

  assert_int_equal(nc->status.observed_generation, 3);
  assert_string_equal(nc->status.spec_hash, "123");
  assert_int_equal(nc->status.zones.n, 2);
  assert_int_equal(nc->status.ntemplates, 1);
  assert_int_equal(nc->status.templates[0].vmid, 9000);
  assert_string_equal(nc->status.templates[0].storage, "local-lvm");
  assert_int_equal(nc->status.ninstance_types, 1);
  assert_int_equal(nc->status.instance_types[0].memory, 8 * GiB);
  assert_int_equal(nc->status.instance_types[0].price_nano, 92000000);

  carp_nodeclass_status_copy(&st, &nc->status);
  carp_free(st.instance_types);
  assert_int_equal(carp_nodeclass_instance_types(&nc->spec, &t, &n), 0);
  st.instance_types = t;
  st.ninstance_types = (uint32_t)n;
  carp_free(st.spec_hash);
  st.spec_hash = carp_strdup("456");
  carp_conditions_set(&st.conditions, &carp_condset_nodeclass,
                      CARP_COND_TEMPLATES_READY, CARP_COND_FALSE,
                      "TemplateNotFound", "no template on pve3", 4,
                      1767323045000LL);
  carp_buf_init(&b, CARP_BUF_UNLIMITED);
  assert_int_equal(carp_nodeclass_status_patch(&st, NULL, &b), 0);
  assert_non_null(strstr(carp_buf_cstr(&b),
                         "\"observedGeneration\":3,\"specHash\":\"456\","
                         "\"regions\":[\"homelab\"],\"zones\":[\"pve1\","
                         "\"pve2\"],\"templates\":[{\"region\":\"homelab\","
                         "\"zone\":\"pve1\",\"vmid\":9000,\"name\":"
                         "\"k3s-agent\",\"node\":\"pve1\",\"storage\":"
                         "\"local-lvm\",\"shared\":false}]"));
  assert_non_null(strstr(carp_buf_cstr(&b),
                         "{\"name\":\"s1.2VCPU-8GB\",\"family\":\"s1\","
                         "\"cpu\":2,\"memory\":\"8Gi\",\"price\":\"0.092\"}"));
  assert_non_null(strstr(carp_buf_cstr(&b),
                         "{\"type\":\"Ready\",\"status\":\"False\","
                         "\"reason\":\"TemplateNotFound\""));
  {
    struct carp_buf doc;
    yajl_val v;
    struct carp_nodeclass *back;
    carp_buf_init(&doc, CARP_BUF_UNLIMITED);
    carp_buf_printf(&doc,
                    "{\"metadata\":{\"name\":\"n\"},\"spec\":{\"template\":{"
                    "\"name\":\"x\"}},%s",
                    strstr(carp_buf_cstr(&b), "\"status\""));
    v = json_of(carp_buf_cstr(&doc));
    back = (struct carp_nodeclass *)decode_json(&carp_kind_proxmoxnodeclass, v,
                                                NULL);
    carp_json_free(v);
    assert_non_null(back);
    assert_int_equal(back->status.ninstance_types, 15);
    assert_string_equal(back->status.spec_hash, "456");
    assert_int_equal(back->status.instance_types[14].memory, 128 * GiB);
    assert_true(
        carp_conditions_is(&back->status.conditions, "Ready", CARP_COND_FALSE));
    carp_obj_unref(&back->meta);
    carp_buf_free(&doc);
  }
  carp_buf_free(&b);
  carp_nodeclass_status_cleanup(&st);
  carp_obj_unref(&nc->meta);
}

static void test_type_errors(void **state)
{
  static const struct {
    const char *yaml, *want;
  } bad[] = {
      {NC(", regions: homelab"), "spec.regions: must be a list"},
      {NC(", regions: [1]"), "spec.regions[0]: must be a string"},
      {NC(", clone: {maxConcurrentFullClones: two}"),
       "spec.clone.maxConcurrentFullClones: must be an integer"},
      {NC(", kubelet: {kubeReserved: {cpu: 1}}"),
       "spec.kubelet.kubeReserved[cpu]: must be a string"},
      {NC(", instanceTypes: {sizes: ['2']}"),
       "spec.instanceTypes.sizes[0]: must be an integer"},
      {NC(", network: {firewall: 'yes'}"),
       "spec.network.firewall: must be a boolean"},
      {NC(", devices: [{name: a, mapping: mm, resource: x.io/a, count: '1'}]"),
       "spec.devices[0].count: must be an integer"},
      {NC(", devices: [{name: a, mapping: mm, resource: x.io/a}], "
          "instanceTypes: {custom: [{name: t, cpu: 1, memory: 1Gi, devices: "
          "[1]}]}"),
       "spec.instanceTypes.custom[0].devices[0]: must be a string"},
  };
  size_t i;
  for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    char *err = NULL;
    assert_null(decode_yaml(&carp_kind_proxmoxnodeclass, bad[i].yaml, &err));
    assert_non_null(err);
    assert_string_equal(err, bad[i].want);
    carp_free(err);
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      LEAK_TEST(test_validation),
      LEAK_TEST(test_defaults),
      LEAK_TEST(test_examples),
      LEAK_TEST(test_instance_types),
      LEAK_TEST(test_capacity),
      LEAK_TEST(test_hash),
      LEAK_TEST(test_status),
      LEAK_TEST(test_type_errors),
      LEAK_TEST(test_device_validation),
      LEAK_TEST(test_device_types),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
