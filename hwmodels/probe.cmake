# protwin-probe: measures a real GPU and writes a machine-file fragment (hwmodels/probe/).
# Argument handling and the output writer are plain C++ (g++, -Werror, tested without a GPU);
# the measuring program is CUDA and is built only where CMake's CUDA language is usable.
add_library(protwin_probe_host STATIC
  ${CMAKE_CURRENT_LIST_DIR}/probe/probe_options.cpp
  ${CMAKE_CURRENT_LIST_DIR}/probe/probe_report.cpp)
protwin_target_defaults(protwin_probe_host)
target_link_libraries(protwin_probe_host PUBLIC protwin_traces)

if(PROTWIN_HAVE_CUDA)
  enable_language(CUDA)
  find_package(CUDAToolkit REQUIRED)
  add_executable(protwin-probe ${CMAKE_CURRENT_LIST_DIR}/probe/probe_main.cu)
  # CUDA 13 builds sm_75 and newer; list the GPUs protwin models (A100, RTX 3090, L40/4090, H100)
  # plus PTX for later ones, since "native" needs a GPU at build time.
  set_target_properties(protwin-probe PROPERTIES
    CUDA_ARCHITECTURES "80-real;86-real;89-real;90"
    CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON)
  target_include_directories(protwin-probe PRIVATE ${PROJECT_SOURCE_DIR})
  target_compile_options(protwin-probe PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra -Werror=all-warnings>)
  target_link_libraries(protwin-probe PRIVATE protwin_probe_host CUDA::cublas CUDA::cudart)
endif()
