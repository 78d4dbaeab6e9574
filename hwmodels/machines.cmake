# Machines as data: hwmodels/machines/*.json are embedded into protwin_hw as raw string literals,
# so `protwin` finds them from any folder. Re-generated when a machine file changes.
protwin_embed_json(protwin_hw ${CMAKE_CURRENT_LIST_DIR}/machines/*.json protwin::hw::detail::embedded_machines)

target_sources(protwin_hw PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/efficiency_curve.cpp
  ${CMAKE_CURRENT_LIST_DIR}/machine.cpp
  ${CMAKE_CURRENT_LIST_DIR}/machine_edit.cpp
  ${CMAKE_CURRENT_LIST_DIR}/collective_model.cpp
  ${CMAKE_CURRENT_LIST_DIR}/hardware_cost_model.cpp
  ${CMAKE_CURRENT_LIST_DIR}/cost_model_choice.cpp)
