# Per-generator CPack settings (CPACK_PROJECT_CONFIG_FILE): the tarball stays relocatable
# (bin/, lib/, share/ at its top directory); the .deb puts that tree under /opt/ncclscope, so
# its bundled libdw/libelf never sit in a directory the system's loader searches.
if(CPACK_GENERATOR STREQUAL "DEB")
  set(CPACK_PACKAGING_INSTALL_PREFIX /opt/ncclscope)
endif()
