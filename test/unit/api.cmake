# Tests for the Karpenter kinds of internal/api (NodePool, NodeClaim,
# ProxmoxNodeClass, conditions, cron and budgets) and the YAML-to-JSON
# conversion they load manifests with. Included by test/unit/CMakeLists.txt.
carp_unit_test(test_nodepool SOURCES test_nodepool.c DEPS carp_api carp_yaml TIMEOUT 60)
