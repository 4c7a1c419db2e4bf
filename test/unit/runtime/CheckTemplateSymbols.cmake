# Checks that the model template (-DTEMPLATE=path) exports only kiln_*
# functions, has no SONAME and needs only the C runtime libraries, so an
# artifact loads anywhere glibc does and links under its own name. Run by ctest as KilnRuntimeTemplateSymbols.
find_program(NM nm)
find_program(READELF readelf)
if(NOT NM OR NOT READELF)
  message(STATUS "nm or readelf not found; skipping")
  return()
endif()

execute_process(COMMAND ${NM} -D --defined-only ${TEMPLATE}
  OUTPUT_VARIABLE symbols RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "nm failed on ${TEMPLATE}")
endif()
string(REPLACE "\n" ";" lines "${symbols}")
set(count 0)
foreach(line IN LISTS lines)
  if(line STREQUAL "")
    continue()
  endif()
  string(REGEX REPLACE "^.* " "" name "${line}")
  if(NOT name MATCHES "^kiln_")
    message(FATAL_ERROR "template exports a non-kiln symbol: ${line}")
  endif()
  math(EXPR count "${count} + 1")
endforeach()
if(count LESS 10)
  message(FATAL_ERROR "template exports only ${count} kiln_ symbols:\n${symbols}")
endif()

execute_process(COMMAND ${READELF} -d ${TEMPLATE}
  OUTPUT_VARIABLE dynamic RESULT_VARIABLE rc)
# Without a SONAME, a program linked against `model.so` records that name.
if(dynamic MATCHES "\\(SONAME\\)")
  message(FATAL_ERROR "template has a SONAME; artifacts copied from it could "
    "not be linked under their own names")
endif()
string(REGEX MATCHALL "Shared library: \\[[^]]*\\]" needed "${dynamic}")
foreach(entry IN LISTS needed)
  string(REGEX REPLACE "Shared library: \\[(.*)\\]" "\\1" lib "${entry}")
  if(NOT lib MATCHES "^(libc\\.so|libm\\.so|libdl\\.so|libpthread\\.so|ld-linux)")
    message(FATAL_ERROR "template needs ${lib}; only libc, libm, libdl, "
      "libpthread and the dynamic loader are allowed")
  endif()
endforeach()
message(STATUS "${count} kiln_ symbols exported; needs: ${needed}")
