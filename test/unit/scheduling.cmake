# Scheduling module tests (internal/scheduling), included by CMakeLists.txt.
set(_s ${CMAKE_CURRENT_LIST_DIR})
carp_unit_test(test_sched_requirements
  SOURCES ${_s}/test_sched_requirements.c DEPS carp_scheduling TIMEOUT 60)
carp_unit_test(test_sched_rules
  SOURCES ${_s}/test_sched_rules.c DEPS carp_scheduling TIMEOUT 60)
carp_unit_test(test_sched_topology
  SOURCES ${_s}/test_sched_topology.c DEPS carp_scheduling TIMEOUT 60)
carp_unit_test(test_sched_solve
  SOURCES ${_s}/test_sched_solve.c DEPS carp_scheduling TIMEOUT 60)
carp_unit_test(test_sched_property
  SOURCES ${_s}/test_sched_property.c DEPS carp_scheduling TIMEOUT 120)
