# Debian packages, built with `cpack -G DEB` (or `cmake --build build --target package`) in the build folder:
#   cnet-tools          the command-line tools, their man pages, the health-check wrapper, /etc/cnet/doctor.conf
#   cnet-slurm-plugins  cnet.so, job_submit_cnet.so, gres_rdma.so for the Slurm they were compiled against,
#                       /etc/slurm/cnet-templates.conf and the slurm.conf/plugstack.conf/gres.conf/mpi.conf snippets
# Plugins are loaded into slurmd, slurmctld and srun, whose plugin ABI changes with every Slurm release, so
# the plugin package depends on exactly the slurm-wlm version it was built against (its plugin folder,
# slurm-wlm-basic-plugins, is what every Slurm daemon and client of that release installs).
# Against Debian's slurm-wlm the plugin package depends on exactly that version. Against a Slurm built
# from source under CNET_SLURM_PREFIX no package owns it: the package names carry the release instead
# (cnet-slurm-plugins-24.11, cnet-tools-slurm-24.11, each standing in for the plain name), and
# libslurm is found in that prefix.
if(CNET_SLURM_PREFIX)
  set(_plugins_name cnet-slurm-plugins-${CNET_SLURM_MAJOR_MINOR})
  set(_tools_name cnet-tools-slurm-${CNET_SLURM_MAJOR_MINOR})
else()
  set(_plugins_name cnet-slurm-plugins)
  set(_tools_name cnet-tools)
endif()
set(_examples "${CMAKE_INSTALL_DATADIR}/doc/${_plugins_name}/examples")
# The plugstack.conf snippet names cnet.so where this build installs it (Debian's plugin folder in the
# source copy; a Slurm under its own prefix has its own).
file(READ contrib/slurm/plugstack.conf _plugstack)
string(REPLACE "/usr/lib/x86_64-linux-gnu/slurm-wlm/" "${CNET_SLURM_PLUGIN_DIR}/" _plugstack "${_plugstack}")
file(WRITE "${CMAKE_BINARY_DIR}/deb/plugstack.conf" "${_plugstack}")
install(FILES "${CMAKE_BINARY_DIR}/deb/plugstack.conf" contrib/slurm/slurm.conf.cnet contrib/slurm/gres.conf.cnet
              contrib/slurm/mpi.conf contrib/slurm/cnet-templates.conf
        DESTINATION "${_examples}" COMPONENT plugins)
install(FILES contrib/slurm/cnet-templates.conf DESTINATION /etc/slurm COMPONENT plugins)
install(FILES contrib/slurm/doctor.conf DESTINATION /etc/cnet COMPONENT tools)
install(PROGRAMS contrib/slurm/health-check DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/cnet COMPONENT tools)
install(FILES contrib/prometheus/cnet-alerts.yml contrib/examples/template-job.sbatch contrib/examples/pipeline-inference.sbatch
              contrib/examples/pytorch-ddp.sbatch contrib/examples/link-check.sbatch contrib/examples/ddp_train.py
        DESTINATION "${CMAKE_INSTALL_DATADIR}/doc/${_tools_name}/examples" COMPONENT tools)
install(FILES doc/user-guide.md DESTINATION "${CMAKE_INSTALL_DATADIR}/doc/${_tools_name}" COMPONENT tools)

# Debian's changelog.gz in each package's doc folder (cmake/deb/changelog: add an entry per release).
set(_changelog "${CMAKE_BINARY_DIR}/deb/changelog.gz")
add_custom_command(OUTPUT "${_changelog}" COMMAND gzip -9nc "${CMAKE_CURRENT_SOURCE_DIR}/cmake/deb/changelog" > "${_changelog}"
                   DEPENDS cmake/deb/changelog VERBATIM)
add_custom_target(deb_changelog ALL DEPENDS "${_changelog}")
install(FILES "${_changelog}" DESTINATION "${CMAKE_INSTALL_DATADIR}/doc/${_tools_name}" COMPONENT tools)
install(FILES "${_changelog}" DESTINATION "${CMAKE_INSTALL_DATADIR}/doc/${_plugins_name}" COMPONENT plugins)

if(CNET_SLURM_PREFIX)
  set(_for_slurm "Slurm ${CNET_SLURM_RELEASE} in ${CNET_SLURM_PREFIX}")
  set(_plugins_depends "")
  set(_tools_depends "")
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS "${_slurm_libdir}")
else()
  execute_process(COMMAND dpkg-query -W -f=\${Version} slurm-wlm-basic-plugins
                  OUTPUT_VARIABLE CNET_SLURM_DEB_VERSION RESULT_VARIABLE _rc ERROR_QUIET)
  if(NOT _rc EQUAL 0 OR CNET_SLURM_DEB_VERSION STREQUAL "")
    message(STATUS "cnet: slurm-wlm-basic-plugins is not a Debian package here: no .deb packages")
    return()
  endif()
  set(_for_slurm "slurm-wlm ${CNET_SLURM_DEB_VERSION}")
  set(_plugins_depends "slurm-wlm-basic-plugins (= ${CNET_SLURM_DEB_VERSION})")
  set(_tools_depends "slurm-client")
endif()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME cnet)
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_CONTACT "cnet maintainers <cnet-maintainers@lists.invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Slurm plugins and tools for GPU/RDMA clusters")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_PACKAGE_DIRECTORY "${CMAKE_BINARY_DIR}/packages")
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL tools plugins)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)  # libucx0, libpmix2, libhwloc15... from the binaries themselves
set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME ${_tools_name})
set(CPACK_DEBIAN_TOOLS_PACKAGE_DEPENDS "${_tools_depends}")
set(CPACK_DEBIAN_TOOLS_DESCRIPTION "cnet command-line tools for Slurm GPU clusters
 cnet-run (pipeline/data-parallel inference), cnet-launch (PyTorch
 bootstrap), cnet-topo (topology, gres.conf, NCCL files), cnet-doctor (node
 checks, HealthCheckProgram), cnet-perf (link benchmark), cnet-pool
 (resource table).")
set(CPACK_DEBIAN_PLUGINS_PACKAGE_NAME ${_plugins_name})
set(CPACK_DEBIAN_PLUGINS_PACKAGE_DEPENDS "${_plugins_depends}")
set(CPACK_DEBIAN_PLUGINS_PACKAGE_RECOMMENDS "${_tools_name} (= ${PROJECT_VERSION})")
if(CNET_SLURM_PREFIX)
  foreach(_field PROVIDES CONFLICTS REPLACES)  # each stands in for the plain package: one cnet per machine
    set(CPACK_DEBIAN_TOOLS_PACKAGE_${_field} cnet-tools)
    set(CPACK_DEBIAN_PLUGINS_PACKAGE_${_field} cnet-slurm-plugins)
  endforeach()
endif()
set(CPACK_DEBIAN_PLUGINS_DESCRIPTION "cnet Slurm plugins built for ${_for_slurm}
 SPANK plugin cnet.so (resource templates, GPU/NIC binding, NCCL topology
 per step), job_submit/cnet (templates applied in slurmctld) and gres/rdma
 (RDMA NICs as GRES). Nothing is enabled on install: see
 /usr/share/doc/${_plugins_name}/examples.")
# Files under /etc are the admin's once installed: dpkg keeps their edits on upgrade.
file(WRITE "${CMAKE_BINARY_DIR}/deb/tools/conffiles" "/etc/cnet/doctor.conf\n")
file(WRITE "${CMAKE_BINARY_DIR}/deb/plugins/conffiles" "/etc/slurm/cnet-templates.conf\n")
set(CPACK_DEBIAN_TOOLS_PACKAGE_CONTROL_EXTRA "${CMAKE_BINARY_DIR}/deb/tools/conffiles")
set(CPACK_DEBIAN_PLUGINS_PACKAGE_CONTROL_EXTRA "${CMAKE_BINARY_DIR}/deb/plugins/conffiles")
include(CPack)
