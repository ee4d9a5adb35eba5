# libperceive.so: the objects of the static library `perceive` (compiled position-independent),
# all of them (whole archive), exporting the public API only: a version script generated from
# include/perceive.h at build time (cmake/symbols.cmake). SONAME libperceive.so.<major>.
file(STRINGS ${CMAKE_SOURCE_DIR}/include/perceive.h pv_version_line REGEX "^#define PV_VERSION \"")
string(REGEX REPLACE ".*\"([0-9]+\\.[0-9]+\\.[0-9]+)\".*" "\\1" PV_VERSION "${pv_version_line}")
string(REGEX REPLACE "^([0-9]+)\\..*" "\\1" PV_SOVERSION "${PV_VERSION}")

set(PV_SYMBOL_MAP ${GEN_DIR}/perceive.map)
add_custom_command(
  OUTPUT ${PV_SYMBOL_MAP}
  COMMAND ${CMAKE_COMMAND} -DIN=${CMAKE_SOURCE_DIR}/include/perceive.h -DOUT=${PV_SYMBOL_MAP}
          -P ${CMAKE_SOURCE_DIR}/cmake/symbols.cmake
  DEPENDS ${CMAKE_SOURCE_DIR}/include/perceive.h ${CMAKE_SOURCE_DIR}/cmake/symbols.cmake
  COMMENT "libperceive.so export list from perceive.h")
add_custom_target(perceive_symbols DEPENDS ${PV_SYMBOL_MAP})

# one empty source: a library target needs one; every object comes from the archive
file(WRITE ${GEN_DIR}/shared_stub.c "/* libperceive.so: all code comes from libperceive.a */\ntypedef int pv_shared_stub;\n")
add_library(perceive_shared SHARED ${GEN_DIR}/shared_stub.c)
add_dependencies(perceive_shared perceive_symbols)
set_target_properties(perceive_shared PROPERTIES OUTPUT_NAME perceive VERSION ${PV_VERSION}
                      SOVERSION ${PV_SOVERSION} LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}
                      LINK_DEPENDS ${PV_SYMBOL_MAP})
target_include_directories(perceive_shared PUBLIC ${CMAKE_SOURCE_DIR}/include)
if(CMAKE_VERSION VERSION_LESS 3.24)   # no $<LINK_LIBRARY:WHOLE_ARCHIVE> before 3.24
  target_link_libraries(perceive_shared PRIVATE -Wl,--whole-archive perceive -Wl,--no-whole-archive)
else()
  target_link_libraries(perceive_shared PRIVATE "$<LINK_LIBRARY:WHOLE_ARCHIVE,perceive>")
endif()
target_link_options(perceive_shared PRIVATE -Wl,--version-script=${PV_SYMBOL_MAP})
if(NOT PERCEIVE_SANITIZE)
  # every symbol resolved at link time (a sanitized build leaves the runtime's to the loader)
  target_link_options(perceive_shared PRIVATE -Wl,--no-undefined)
endif()
