# Tests for the Karpenter kinds of internal/api (NodePool, NodeClaim,
# ProxmoxNodeClass, conditions, cron and budgets), the CRD manifests
# against the C validation, and the YAML-to-JSON conversion they load
# manifests with. Included by test/unit/CMakeLists.txt.
carp_unit_test(test_conditions SOURCES test_conditions.c DEPS carp_api carp_yaml TIMEOUT 60)
carp_unit_test(test_cron SOURCES test_cron.c DEPS carp_api carp_yaml TIMEOUT 60)
carp_unit_test(test_nodepool SOURCES test_nodepool.c DEPS carp_api carp_yaml TIMEOUT 60)
carp_unit_test(test_nodeclaim SOURCES test_nodeclaim.c DEPS carp_api carp_yaml TIMEOUT 60)
carp_unit_test(test_nodeclass SOURCES test_nodeclass.c DEPS carp_api carp_yaml TIMEOUT 60)
carp_unit_test(test_crd_manifests SOURCES test_crd_manifests.c DEPS carp_api carp_yaml TIMEOUT 60)
carp_unit_test(test_yaml_tojson SOURCES test_yaml_tojson.c DEPS carp_yaml TIMEOUT 30)
