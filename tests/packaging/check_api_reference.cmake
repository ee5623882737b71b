# SPDX-License-Identifier: Apache-2.0
# Fails unless every public declaration has a `///` comment: runs Doxygen with the API reference's
# configuration (the Doxyfile of the `docs` target) into a folder of its own, with warnings as
# errors, and fails on any warning (an undocumented member, a broken reference in a comment).
# Doxygen 1.9.4 (Debian 12) does not warn about undocumented enumerators, namespaces or headers,
# so the XML it also writes is checked for those.
# Arguments: DOXYGEN (the executable), DOXYFILE (the configured Doxyfile), OUT (a scratch folder).
file(REMOVE_RECURSE "${OUT}")
file(MAKE_DIRECTORY "${OUT}")
file(WRITE "${OUT}/Doxyfile"
     "@INCLUDE = \"${DOXYFILE}\"\n"
     "OUTPUT_DIRECTORY = \"${OUT}\"\n"
     "WARN_AS_ERROR = FAIL_ON_WARNINGS\n"
     "WARN_LOGFILE =\n"
     "GENERATE_XML = YES\n"
     "XML_PROGRAMLISTING = NO\n")
execute_process(COMMAND "${DOXYGEN}" "${OUT}/Doxyfile" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(STRIP "${out}${err}" log)
if(NOT rc EQUAL 0 OR NOT log STREQUAL "")
  message(FATAL_ERROR "Doxygen (exit status ${rc}) warns about the public headers; give each declaration it "
                      "names a `///` comment (docs/development.md, \"API reference\"):\n${log}")
endif()

set(empty_docs "<briefdescription>[ \n]*</briefdescription>[ \n]*<detaileddescription>[ \n]*</detaileddescription>")
set(problems "")
file(GLOB xmls "${OUT}/xml/*.xml")
foreach(xml_file IN LISTS xmls)
  file(READ "${xml_file}" xml)
  string(REGEX MATCH "<compounddef id=\"[^\"]*\" kind=\"([a-z]*)\"" _ "${xml}")
  set(kind "${CMAKE_MATCH_1}")
  string(REGEX MATCH "<compoundname>([^<]*)</compoundname>" _ "${xml}")
  set(name "${CMAKE_MATCH_1}")
  # A namespace's or header's own description is the last one in its file (after its members').
  if((kind STREQUAL "namespace" AND name MATCHES "^gpumath") OR (kind STREQUAL "file" AND name MATCHES "\\.hpp$"))
    string(FIND "${xml}" "<briefdescription>" at REVERSE)
    string(SUBSTRING "${xml}" ${at} -1 tail)
    if(tail MATCHES "^${empty_docs}")
      string(REGEX MATCH "<location file=\"([^\"]*)\"" _ "${tail}")
      list(APPEND problems "include/${CMAKE_MATCH_1}: ${kind} ${name} is not documented (`/// @file` for a header)")
    endif()
  endif()
  # Enumerators without a comment, each reported with its enum's location.
  set(rest "${xml}")
  while(rest MATCHES "<enumvalue id=\"[^\"]*\" prot=\"[a-z]*\">[ \n]*<name>([^<]*)</name>[ \n]*(<initializer>[^<]*</initializer>[ \n]*)?${empty_docs}")
    set(enumerator "${CMAKE_MATCH_1}")
    string(FIND "${rest}" "${CMAKE_MATCH_0}" at)
    string(SUBSTRING "${rest}" 0 ${at} before)
    string(FIND "${before}" "<memberdef kind=\"enum\"" enum_at REVERSE)
    string(SUBSTRING "${before}" ${enum_at} -1 enum_xml)
    string(REGEX MATCH "<qualifiedname>([^<]*)</qualifiedname>" _ "${enum_xml}")
    set(enum "${CMAKE_MATCH_1}")
    string(SUBSTRING "${rest}" ${at} -1 rest)
    string(REGEX MATCH "<location file=\"([^\"]*)\" line=\"([0-9]*)\"" _ "${rest}")
    list(APPEND problems "include/${CMAKE_MATCH_1}:${CMAKE_MATCH_2}: enumerator ${enum}::${enumerator} is not documented")
    string(LENGTH "<enumvalue" skip)
    string(SUBSTRING "${rest}" ${skip} -1 rest)
  endwhile()
endforeach()
list(REMOVE_DUPLICATES problems)
if(problems)
  list(JOIN problems "\n" text)
  message(FATAL_ERROR "Undocumented public declarations, which Doxygen does not warn about; give each a `///` "
                      "comment:\n${text}")
endif()
message(STATUS "Doxygen: every public declaration is documented")
