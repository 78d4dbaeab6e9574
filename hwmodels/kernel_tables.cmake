# Measured kernel tables: hwmodels/kernel_tables/*.json (made by `protwin import-table` from public
# profiles, see hwmodels/kernel_tables/README.md), embedded like the machines.
protwin_embed_json(protwin_hw ${CMAKE_CURRENT_LIST_DIR}/kernel_tables/*.json protwin::hw::detail::embedded_kernel_tables)

target_sources(protwin_hw PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/kernel_model.cpp
  ${CMAKE_CURRENT_LIST_DIR}/kernel_table.cpp)
