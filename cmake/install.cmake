# `make install` / `cmake --install BUILD [--prefix P]` (DESTDIR honoured): libperceive.so (+ its
# soname links) and libperceive.a, perceive.h, the CLI, perceive.pc, perceive(1), and the Python
# package into Debian's python3 path (PREFIX/lib/python3/dist-packages: /usr/lib/python3/dist-packages
# for PREFIX=/usr). The package finds the library through _where.py, a path relative to itself,
# so a DESTDIR staging tree works as installed.
include(GNUInstallDirs)
set(PERCEIVE_PYTHON_DIR "lib/python3/dist-packages" CACHE STRING
    "where `make install` puts the Python package, relative to the prefix")

install(TARGETS perceive_shared LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS perceive ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS perceive_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${CMAKE_SOURCE_DIR}/include/perceive.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${CMAKE_SOURCE_DIR}/docs/perceive.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)

# static linking (pkg-config --static): what libperceive.a needs beyond the Requires.private modules
set(PV_PC_LIBS_PRIVATE "")
if(PERCEIVE_DNNL)
  set(PV_PC_LIBS_PRIVATE "-ldnnl ${OpenMP_C_FLAGS}")
endif()
configure_file(${CMAKE_SOURCE_DIR}/cmake/perceive.pc.in ${CMAKE_BINARY_DIR}/perceive.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/perceive.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

install(DIRECTORY ${CMAKE_SOURCE_DIR}/python/perceive DESTINATION ${PERCEIVE_PYTHON_DIR}
        FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)
file(RELATIVE_PATH PV_LIB_FROM_PY /p/${PERCEIVE_PYTHON_DIR}/perceive /p/${CMAKE_INSTALL_LIBDIR})
file(WRITE ${GEN_DIR}/_where.py.tmp "# written by `make install` (cmake/install.cmake): the library directory relative to this package\n"
     "LIBDIR_FROM_PACKAGE = \"${PV_LIB_FROM_PY}\"\n")
configure_file(${GEN_DIR}/_where.py.tmp ${GEN_DIR}/_where.py COPYONLY)
install(FILES ${GEN_DIR}/_where.py DESTINATION ${PERCEIVE_PYTHON_DIR}/perceive)
