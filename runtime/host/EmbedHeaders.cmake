# Writes OUT: a C++ array `kHostHeaders` of {file name, contents} for each
# file in HEADERS, so the runtime carries the emulation headers it compiles
# generated kernels against.
set(text "// Generated from runtime/host by EmbedHeaders.cmake. Do not edit.\n")
string(APPEND text "const EmbeddedHeader kHostHeaders[] = {\n")
foreach(header ${HEADERS})
  file(READ "${header}" contents)
  if(contents MATCHES "\\)kiln_header\"")
    message(FATAL_ERROR "${header} contains the raw-string delimiter")
  endif()
  get_filename_component(name "${header}" NAME)
  string(APPEND text "    {\"${name}\", R\"kiln_header(${contents})kiln_header\"},\n")
endforeach()
string(APPEND text "};\n")
file(WRITE "${OUT}.tmp" "${text}")
file(RENAME "${OUT}.tmp" "${OUT}")
