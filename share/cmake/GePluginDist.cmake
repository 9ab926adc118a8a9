# GePluginDist.cmake: what a distribution of the tools needs besides the
# binaries (included at the end of the top CMakeLists.txt):
#   - RUNPATH: none when the library folder is a system one (/usr: the Debian
#     package), else relative to each binary ($ORIGIN, relocatable installs);
#   - the systemd unit, generated for the install prefix (configure_file);
#   - bash completion, one file per command;
#   - man pages made by help2man from each tool's --help and --version;
#   - the Debian package through CPack (`make deb`, README.md "Debian package").

# ---- RUNPATH ------------------------------------------------------------------------------
# The installed binaries' own RUNPATHs are set where they are defined
# ($ORIGIN/<relative path to the library folder>). Under /usr the library
# folder is on the linker's default path: no RUNPATH at all (Debian policy;
# lintian's custom-library-search-path).
set(GE_INSTALLED_TARGETS ge_framework ge_host ge_native_ext ge-run ge-plugin-ls ge-plugin-registryd ge-plugin-scan
  ge-plugin-worker)
list(FIND CMAKE_CXX_IMPLICIT_LINK_DIRECTORIES "${CMAKE_INSTALL_FULL_LIBDIR}" _ge_system_libdir)
if(NOT _ge_system_libdir EQUAL -1)
  foreach(t IN LISTS GE_INSTALLED_TARGETS)
    if(TARGET ${t})
      set_target_properties(${t} PROPERTIES INSTALL_RPATH "")
    endif()
  endforeach()
endif()

# ---- systemd unit ---------------------------------------------------------------------------
# Paths in the unit are the install prefix's (systemd-analyze verify checks that
# ExecStart exists); installing the build with another --prefix than the
# configured CMAKE_INSTALL_PREFIX gives a unit pointing at the configured one.
set(GE_REGISTRY_SOCKET_GROUP adm CACHE STRING "the group whose members may list through the system daemon's socket")
configure_file(share/systemd/ge-plugin-registryd.service.in
  "${CMAKE_BINARY_DIR}/systemd/ge-plugin-registryd.service" @ONLY)
configure_file(share/systemd/ge-plugin-registryd.socket.in
  "${CMAKE_BINARY_DIR}/systemd/ge-plugin-registryd.socket" @ONLY)
install(FILES "${CMAKE_BINARY_DIR}/systemd/ge-plugin-registryd.service"
  "${CMAKE_BINARY_DIR}/systemd/ge-plugin-registryd.socket" DESTINATION "${GE_INSTALL_SYSTEMDUNITDIR}")

# ---- bash completion -------------------------------------------------------------------------
# bash-completion loads completions/<command> on first use of <command>.
install(FILES share/completion/ge-run share/completion/ge-plugin-ls share/completion/ge-plugin-registryd
  DESTINATION "${CMAKE_INSTALL_DATADIR}/bash-completion/completions")

# ---- man pages (help2man) -----------------------------------------------------------------------
# Each page is the tool's --help (usage, description, options, exit status,
# environment, files) turned into troff by help2man (share/cmake/GePluginMan.cmake),
# compressed as Debian wants (gzip -9n). Without help2man there are none.
find_program(GE_HELP2MAN help2man)
if(GE_HELP2MAN)
  set(_ge_man_files)
  foreach(spec "ge-run|1|run a graph of GE custom operators (C++ and Python plugins) and write its outputs"
                "ge-plugin-ls|1|list the installed GE plugins, their ops, capabilities and status"
                "ge-plugin-registryd|8|the machine-wide registry daemon of GE plugins")
    string(REPLACE "|" ";" spec "${spec}")
    list(GET spec 0 tool)
    list(GET spec 1 section)
    list(GET spec 2 summary)
    set(page "${CMAKE_BINARY_DIR}/man/${tool}.${section}.gz")
    add_custom_command(OUTPUT "${page}"
      COMMAND "${CMAKE_COMMAND}" -DHELP2MAN=${GE_HELP2MAN} -DPROGRAM=$<TARGET_FILE:${tool}> -DSECTION=${section}
              "-DSUMMARY=${summary}" -DOUTPUT=${page} -P "${PROJECT_SOURCE_DIR}/share/cmake/GePluginMan.cmake"
      DEPENDS ${tool} "${PROJECT_SOURCE_DIR}/share/cmake/GePluginMan.cmake"
      COMMENT "man page ${tool}(${section})" VERBATIM)
    list(APPEND _ge_man_files "${page}")
    install(FILES "${page}" DESTINATION "${CMAKE_INSTALL_MANDIR}/man${section}")
  endforeach()
  add_custom_target(ge-man ALL DEPENDS ${_ge_man_files})
else()
  message(STATUS "GE plugin host: help2man not found; no man pages (apt-get install help2man)")
endif()

# ---- Debian package (CPack) ----------------------------------------------------------------------
# `make deb` configures build-deb/ with CMAKE_INSTALL_PREFIX=/usr (GNUInstallDirs
# then gives the multiarch lib/<triplet>) and GE_INSTALL_PYTHONDIR=
# lib/python3/dist-packages, builds, and runs cpack -G DEB there.
set(GE_DEB_PACKAGE ge-plugin-host)
set(GE_DEB_DOCDIR "${CMAKE_INSTALL_DATADIR}/doc/${GE_DEB_PACKAGE}")
# Debian wants a copyright file and a changelog in every package's doc folder.
configure_file(share/debian/changelog.in "${CMAKE_BINARY_DIR}/debian/changelog" @ONLY)
add_custom_command(OUTPUT "${CMAKE_BINARY_DIR}/debian/changelog.gz"
  COMMAND gzip -9n -c "${CMAKE_BINARY_DIR}/debian/changelog" > "${CMAKE_BINARY_DIR}/debian/changelog.gz"
  DEPENDS "${CMAKE_BINARY_DIR}/debian/changelog" VERBATIM)
add_custom_target(ge-deb-changelog ALL DEPENDS "${CMAKE_BINARY_DIR}/debian/changelog.gz")
install(FILES share/debian/copyright DESTINATION "${GE_DEB_DOCDIR}")
install(FILES "${CMAKE_BINARY_DIR}/debian/changelog.gz" DESTINATION "${GE_DEB_DOCDIR}")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME ${GE_DEB_PACKAGE})
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "GE plugin host")
set(CPACK_PACKAGE_CONTACT "GE plugin host maintainers <ge-plugin-host@example.org>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "standalone host for Python custom operators of CANN Graph Engine")
# Debian's extended description: lines of at most 80 columns.
set(CPACK_PACKAGE_DESCRIPTION
  "The GE plugin host loads Python custom operators written against the\n\
Python custom-operator API of Huawei CANN's Graph Engine (ge.custom_op,\n\
ge.runtime, ge.graph), each in its own Python sub-interpreter, and hands\n\
C++ engines operator objects. This package holds the libraries (the\n\
framework without Python, and the plugin host), their headers, CMake and\n\
pkg-config files, ge-run (a reference engine), ge-plugin-ls and the\n\
registry daemon ge-plugin-registryd with its systemd units, and the ge\n\
Python package.")
set(CPACK_PACKAGING_INSTALL_PREFIX "${CMAKE_INSTALL_PREFIX}")
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Shared-library dependencies are computed by dpkg-shlibdeps; what the
# binaries do not link but use at run time is stated: the ge package imports
# numpy in Debian's Python 3.11; the unit's ExecReload runs /bin/kill (procps).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "python3 (>= 3.11), python3 (<< 3.12), python3-numpy, procps")
# The package's own libraries: a shlibs file and the ldconfig trigger.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY "=")
# triggers: ldconfig after the libraries are installed or removed (our own
# postinst replaces the one CPack would write with the ldconfig call).
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
  "${PROJECT_SOURCE_DIR}/share/debian/triggers;${PROJECT_SOURCE_DIR}/share/debian/postinst;${PROJECT_SOURCE_DIR}/share/debian/prerm;${PROJECT_SOURCE_DIR}/share/debian/postrm")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_OUTPUT_FILE_PREFIX "${CMAKE_BINARY_DIR}/deb")
include(CPack)
