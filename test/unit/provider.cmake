# Tests of internal/provider (included by test/unit/CMakeLists.txt).
#   test_provider_fake   the provider.h wrapper (metrics, typed errors, ids,
#                        requirements) and the fake provider
#   test_pve_units       --pve-config, form encoding, errors, UPIDs, the ISO
#                        builder, user-data rendering, descriptions
#   test_pve_hosts       host state (HA maintenance, offline since when) and
#                        placement leaving such hosts out
#   test_pve_devices     resource mappings, free devices per host, placement
#                        and offerings of types with devices
#   test_pve_client      the API client and task polling against hack/pve-sim
#   provider_pve_sim     the whole provider against hack/pve-sim
#                        (test/integration/provider; label integration)
carp_unit_test(test_provider_fake
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_provider_fake.c
  DEPS carp_provider_fake carp_provider carp_api carp_metrics carp_core
  TIMEOUT 30)
carp_unit_test(test_pve_units
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_pve_units.c
  DEPS carp_provider_proxmox TIMEOUT 30)
target_include_directories(test_pve_units PRIVATE
  ${CMAKE_SOURCE_DIR}/internal/provider/proxmox)
carp_unit_test(test_pve_hosts
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_pve_hosts.c
  DEPS carp_provider_proxmox TIMEOUT 30)
target_include_directories(test_pve_hosts PRIVATE
  ${CMAKE_SOURCE_DIR}/internal/provider/proxmox)
carp_unit_test(test_pve_devices
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_pve_devices.c
  DEPS carp_provider_proxmox TIMEOUT 30)
target_include_directories(test_pve_devices PRIVATE
  ${CMAKE_SOURCE_DIR}/internal/provider/proxmox)
carp_unit_test(test_pve_client
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_pve_client.c
  DEPS carp_provider_proxmox TIMEOUT 120 LABELS integration)

add_executable(provider_driver
  ${CMAKE_SOURCE_DIR}/test/integration/provider/provider_driver.c)
target_include_directories(provider_driver PRIVATE ${CMAKE_SOURCE_DIR}/include
  ${CMAKE_BINARY_DIR}/generated)
target_compile_options(provider_driver PRIVATE ${CARP_WARNINGS}
  -Wno-format-truncation)
target_link_libraries(provider_driver PRIVATE carp_provider_proxmox carp_api)
carp_script_test(provider_pve_sim
  COMMAND python3 ${CMAKE_SOURCE_DIR}/test/integration/provider/test_provider.py
          $<TARGET_FILE:provider_driver>
  TIMEOUT 240 LABELS integration)
