# cmake -DIN=include/perceive.h -DOUT=perceive.map -P symbols.cmake: writes the linker version
# script of libperceive.so. Exported: every function the public header declares (a line that
# starts with a type and names pv_something followed by "("); local: everything else, so the
# bundles' and modules' own symbols (pvc_, pvg_, pv_bundle_find...) stay inside the library.
file(STRINGS ${IN} lines)
set(names "")
foreach(line IN LISTS lines)
  if(line MATCHES "^[A-Za-z][A-Za-z0-9_ ]*[ *](pv_[a-z0-9_]+)\\(")
    list(APPEND names ${CMAKE_MATCH_1})
  endif()
endforeach()
list(REMOVE_DUPLICATES names)
list(LENGTH names n)
if(n LESS 10)
  message(FATAL_ERROR "symbols.cmake: only ${n} pv_ functions found in ${IN}")
endif()
list(SORT names)
string(REPLACE ";" ";\n    " body "${names}")
file(WRITE ${OUT}.tmp "/* generated from ${IN} by cmake/symbols.cmake */\nPERCEIVE_0 {\n  global:\n    ${body};\n  local:\n    *;\n};\n")
# only touch OUT when it changes, so an unrelated header edit does not relink
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different ${OUT}.tmp ${OUT})
file(REMOVE ${OUT}.tmp)
