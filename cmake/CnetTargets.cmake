# Warnings and sanitizers for cnet's own targets only (never for fetched or system code).
set(CNET_WARNINGS -Wall -Wextra -Werror)

if(CNET_SANITIZE)
  string(REPLACE "," ";" _sanitizers "${CNET_SANITIZE}")
  foreach(s IN LISTS _sanitizers)
    if(NOT s MATCHES "^(address|undefined|leak|thread)$")
      message(FATAL_ERROR "CNET_SANITIZE: unknown sanitizer '${s}' (use address, undefined, leak or thread)")
    endif()
  endforeach()
  add_compile_options(-fsanitize=${CNET_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=${CNET_SANITIZE})
  # GCC 12's instrumented <regex> and <functional> trip false maybe-uninitialized warnings.
  list(APPEND CNET_WARNINGS -Wno-maybe-uninitialized)
endif()

function(cnet_strict target)
  target_compile_options(${target} PRIVATE ${CNET_WARNINGS})
endfunction()

# cnet_library(<name> SOURCES ...): a static library with its public headers under include/.
function(cnet_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/include)
  cnet_strict(${name})
endfunction()

# cnet_tool(<name> SOURCES ...): a command-line tool installed to bin.
function(cnet_tool name)
  cmake_parse_arguments(ARG "" "" "SOURCES" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  cnet_strict(${name})
  install(TARGETS ${name} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT tools)
endfunction()

# cnet_slurm_plugin(<file name without .so> SOURCES ...): a shared object Slurm dlopens, written to
# build/plugins and installed into the Slurm plugin folder.
function(cnet_slurm_plugin name)
  cmake_parse_arguments(ARG "" "" "SOURCES" ${ARGN})
  add_library(${name} MODULE ${ARG_SOURCES})
  set_target_properties(${name} PROPERTIES PREFIX "" LIBRARY_OUTPUT_DIRECTORY "${CNET_PLUGIN_OUTPUT_DIR}")
  cnet_strict(${name})
  install(TARGETS ${name} LIBRARY DESTINATION "${CNET_SLURM_PLUGIN_DIR}" COMPONENT plugins)
endfunction()
