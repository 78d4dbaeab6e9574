# Op profiles and the Kineto importer (traces/op_profile.*, traces/kineto_import.*).
target_sources(protwin_traces PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/op_profile.cpp
  ${CMAKE_CURRENT_LIST_DIR}/kineto_import.cpp
  ${CMAKE_CURRENT_LIST_DIR}/host_dispatch_import.cpp
  ${CMAKE_CURRENT_LIST_DIR}/table_import.cpp)

# Kineto traces usually come gzipped.
find_package(ZLIB REQUIRED)
target_link_libraries(protwin_traces PRIVATE ZLIB::ZLIB)

# The shipped profiles traces/profiles/*.json, compiled in so `protwin` finds them from any folder.
protwin_embed_json(protwin_traces ${CMAKE_CURRENT_LIST_DIR}/profiles/*.json protwin::traces::detail::shipped_profile_files)
