# End-to-end tests: the real runpoolctl driving real runpool-agents on local-cloud instances, jobs
# run through the GitHub stand-in's broker (ctest label `e2e`; `make e2e` builds and runs them).
# Included by controller/CMakeLists.txt once every directory is known (deferred: no subdirectory
# can be added then, hence a file to include).
if(NOT TARGET runpoolctl OR NOT TARGET runpool-agent OR NOT TARGET runpool_test_support)
  message(STATUS "e2e tests not built: runpoolctl, runpool-agent or the test support library is missing")
  return()
endif()

file(GLOB RUNPOOL_E2E_TESTS CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*_test.cc)
set(RUNPOOL_E2E_TARGETS)
foreach(source IN LISTS RUNPOOL_E2E_TESTS)
  get_filename_component(name ${source} NAME_WE)
  add_executable(e2e_${name} ${source})
  target_link_libraries(e2e_${name} PRIVATE runpool_test_support runpool_controller_lib runpool_agent_lib GTest::gtest_main)
  target_compile_definitions(e2e_${name} PRIVATE
    RUNPOOL_CTL_BINARY="$<TARGET_FILE:runpoolctl>"
    RUNPOOL_AGENT_BINARY="$<TARGET_FILE:runpool-agent>"
    RUNPOOL_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
  add_dependencies(e2e_${name} runpoolctl runpool-agent)
  set_target_properties(e2e_${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/e2e)
  add_test(NAME e2e.${name} COMMAND e2e_${name})
  # One e2e test at a time (each runs many agents against its own local cloud), beside the other
  # tiers rather than alone: started first (COST), they are the longest chain of the run.
  set_tests_properties(e2e.${name} PROPERTIES LABELS e2e TIMEOUT 900 RESOURCE_LOCK runpool_e2e COST 1000)
  list(APPEND RUNPOOL_E2E_TARGETS e2e_${name})
endforeach()

add_custom_target(e2e
  COMMAND ${CMAKE_CTEST_COMMAND} -L e2e --output-on-failure
  WORKING_DIRECTORY ${CMAKE_BINARY_DIR}
  DEPENDS ${RUNPOOL_E2E_TARGETS}
  COMMENT "runpool end-to-end tests on the local cloud"
  USES_TERMINAL)

# The newcomer test plays the install doc's stack in moto's CloudFormation (the local cloud has
# none): moto's server from the moto tier's virtual environment (tests/moto).
if(TARGET e2e_newcomer_test)
  target_sources(e2e_newcomer_test PRIVATE ${CMAKE_SOURCE_DIR}/tests/moto/moto_server.cc)
  target_compile_definitions(e2e_newcomer_test PRIVATE
    RUNPOOL_MOTO_SERVER="${CMAKE_BINARY_DIR}/venv-moto/bin/moto_server")
  set_tests_properties(e2e.newcomer_test PROPERTIES TIMEOUT 300 FIXTURES_REQUIRED moto_venv)
endif()
