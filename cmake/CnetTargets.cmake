# Warnings and sanitizers for cnet's own targets only (never for fetched or system code).
# Warnings are errors only where the project's own CI asks (CNET_WARNINGS_AS_ERRORS, on in
# contrib/run-tests.sh): packagers and newer compilers meet warnings cnet has never seen.
option(CNET_WARNINGS_AS_ERRORS "Treat compiler warnings in cnet's code as errors (the project's CI)" OFF)
set(CNET_WARNINGS -Wall -Wextra)
if(CNET_WARNINGS_AS_ERRORS)
  list(APPEND CNET_WARNINGS -Werror)
  # GCC 12 at -O3 reports std::string concatenation as overlapping memcpy (GCC bug 105329, fixed in 13).
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    list(APPEND CNET_WARNINGS -Wno-error=restrict)
  endif()
endif()

if(CNET_SANITIZE)
  string(REPLACE "," ";" _sanitizers "${CNET_SANITIZE}")
  foreach(s IN LISTS _sanitizers)
    if(NOT s MATCHES "^(address|undefined|leak|thread)$")
      message(FATAL_ERROR "CNET_SANITIZE: unknown sanitizer '${s}' (use address, undefined, leak or thread)")
    endif()
  endforeach()
  # C and C++ only: nvcc does not take these (the CUDA module's host code is C++ and gets them).
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:-fsanitize=${CNET_SANITIZE};-fno-omit-frame-pointer;-fno-sanitize-recover=undefined>")
  add_link_options(-fsanitize=${CNET_SANITIZE})
  # GCC 12's instrumented <regex> and <functional> trip false maybe-uninitialized warnings.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    list(APPEND CNET_WARNINGS -Wno-maybe-uninitialized)
  endif()
endif()
if(CNET_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "CNET_FUZZ needs clang (libFuzzer): -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++")
  endif()
  add_compile_options($<$<COMPILE_LANGUAGE:C,CXX>:-fsanitize=fuzzer-no-link>)  # coverage for the fuzzer in every library it drives
endif()

# Hardening as Debian builds packages (dpkg-buildflags with hardening=+all: fortify, stack protector
# strong, format security, relro, bind now, PIE, stack clash and control-flow protection), in every
# optimised build: root daemons load
# cnet's plugins and root runs its tools. Not at -O0 (fortify needs optimisation) nor under sanitizers
# and the fuzzer, which bring their own checks. hardening-check (devscripts) verifies it (tools.hardening).
set(_cnet_hardening_default ON)
if(CNET_SANITIZE OR CNET_FUZZ)
  set(_cnet_hardening_default OFF)
endif()
option(CNET_HARDENING "Build with Debian's hardening flags in optimised builds" ${_cnet_hardening_default})
if(CNET_HARDENING)
  set(_optimised "$<AND:$<COMPILE_LANGUAGE:C,CXX>,$<NOT:$<CONFIG:Debug>>>")
  add_compile_options("$<${_optimised}:-U_FORTIFY_SOURCE;-D_FORTIFY_SOURCE=2>" "$<$<COMPILE_LANGUAGE:C,CXX>:-fstack-protector-strong;-Wformat;-Werror=format-security>")
  add_link_options(-Wl,-z,relro -Wl,-z,now)
  # What newer dpkg-buildflags add and hardening-check looks for, where the compiler and target have it.
  include(CheckCXXCompilerFlag)
  foreach(flag -fstack-clash-protection -fcf-protection)
    string(MAKE_C_IDENTIFIER "CNET_HAS${flag}" _has)
    check_cxx_compiler_flag(${flag} ${_has})
    if(${_has})
      add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:${flag}>")
    endif()
  endforeach()
  include(CheckPIESupported)
  check_pie_supported(LANGUAGES C CXX)
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

# cnet_slurm_plugin(<file name without .so> EXPORTS <version script> SOURCES ...): a shared object Slurm
# dlopens, written to build/plugins and installed into the Slurm plugin folder. The version script
# exports only Slurm's entry points; the static C++ libraries inside stay private to the plugin.
function(cnet_slurm_plugin name)
  cmake_parse_arguments(ARG "" "EXPORTS" "SOURCES" ${ARGN})
  add_library(${name} MODULE ${ARG_SOURCES})
  set_target_properties(${name} PROPERTIES PREFIX "" LIBRARY_OUTPUT_DIRECTORY "${CNET_PLUGIN_OUTPUT_DIR}"
                                           LINK_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/${ARG_EXPORTS}")
  target_link_options(${name} PRIVATE "-Wl,--version-script=${CMAKE_CURRENT_SOURCE_DIR}/${ARG_EXPORTS}" "-Wl,--exclude-libs,ALL")
  cnet_strict(${name})
  install(TARGETS ${name} LIBRARY DESTINATION "${CNET_SLURM_PLUGIN_DIR}" COMPONENT plugins)
endfunction()
