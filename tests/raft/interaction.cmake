# Interaction scripts: tests/raft/testdata/*.txt replayed against the Raft core, output compared
# with the golden text in each file (RAFTLOCK_REWRITE_GOLDEN=1 rewrites it; see docs/raft.md).
add_executable(raft_interaction_tests
    ${CMAKE_CURRENT_SOURCE_DIR}/interaction_env.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/interaction_test.cc
)
target_link_libraries(raft_interaction_tests PRIVATE raft catch_main)
target_compile_definitions(raft_interaction_tests PRIVATE
    RAFTLOCK_INTERACTION_TESTDATA_DEFAULT="${CMAKE_CURRENT_SOURCE_DIR}/testdata")
add_test(NAME raft_interaction COMMAND raft_interaction_tests)
set_tests_properties(raft_interaction PROPERTIES
    ENVIRONMENT "RAFTLOCK_INTERACTION_TESTDATA=${CMAKE_CURRENT_SOURCE_DIR}/testdata")
