# SPDX-License-Identifier: Apache-2.0
# Fails if BINARY names any of the libraries in FORBIDDEN (comma-separated name fragments, e.g.
# libcublasLt,libcufft) among its needed libraries: a module's consumer links only that module's CUDA
# libraries.
find_program(READELF readelf REQUIRED)
if(NOT EXISTS "${BINARY}")
  message(FATAL_ERROR "${BINARY} does not exist; its consumer test builds it")
endif()
execute_process(COMMAND "${READELF}" -d "${BINARY}" OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "readelf -d ${BINARY} failed")
endif()
string(REPLACE "," ";" FORBIDDEN "${FORBIDDEN}")
foreach(lib IN LISTS FORBIDDEN)
  if(out MATCHES "NEEDED[^\n]*${lib}")
    message(FATAL_ERROR "${BINARY} needs ${lib}, which its module must not link")
  endif()
endforeach()
message(STATUS "${BINARY} needs none of: ${FORBIDDEN}")
