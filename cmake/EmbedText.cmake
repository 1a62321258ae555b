# Writes OUTPUT, a C++ file that defines `const char *NAME()` returning the
# text of INPUT verbatim (the launcher runtime, copied into every launcher;
# the shipped pattern files), in namespace NAMESPACE. See fusec_embed_text in
# the top-level CMakeLists.txt.
file(READ "${INPUT}" TEXT)
file(WRITE "${OUTPUT}" "// Generated from ${INPUT} by cmake/EmbedText.cmake.\n"
  "namespace ${NAMESPACE} {\n"
  "const char *${NAME}() {\n  return R\"FUSECRT(${TEXT})FUSECRT\";\n}\n}\n")
