# SPDX-License-Identifier: Apache-2.0
# Fails if a public header reaches a header it must not (docs/design.md, "Headers"): the compiler
# lists every file each header includes (-M), and each rule names files that must be absent.
# Arguments: CXX (the compiler), INCLUDE_DIRS (comma-separated: gpumath's include/ and CUDA's).
set(cuda_types "cuda_fp16.h,cuda_bf16.h,cuda_fp8.h,cuComplex.h")
# header|files it must not include, comma-separated (matched as the end of a path)
set(rules
    "gpumath/types.hpp|${cuda_types},cuda.h"
    "gpumath/layout.hpp|${cuda_types},cuda.h"
    "gpumath/tensor.hpp|${cuda_types},cuda.h"
    "gpumath/matmul.hpp|${cuda_types},cuda.h"
    "gpumath/fft.hpp|${cuda_types},cuda.h"
    "gpumath/linalg.hpp|${cuda_types},cuda.h"
    "gpumath/sparse.hpp|${cuda_types},cuda.h,cusparse.h"
    "gpumath/fft/options.hpp|${cuda_types},cuda.h,gpumath/core/program.hpp"
    "gpumath/core.hpp|${cuda_types},gpumath/tensor.hpp"
    "gpumath/core/launch.hpp|gpumath/tensor.hpp"
    "gpumath/core/object_code.hpp|cuda.h,gpumath/core/module.hpp,gpumath/core/program.hpp"
    "gpumath/core/compile_cache.hpp|cuda.h,gpumath/core/object_code.hpp"
    "gpumath/core/cache.hpp|cuda_runtime_api.h,cuda.h,${cuda_types}")
# header|files it must include (the umbrella keeps CUDA's element types for existing users)
set(required
    "gpumath/gpumath.hpp|${cuda_types}"
    "gpumath/core/program.hpp|gpumath/core/object_code.hpp,gpumath/core/compile_cache.hpp,gpumath/core/module.hpp")

set(flags -std=c++20 -M -x c++)
string(REPLACE "," ";" INCLUDE_DIRS "${INCLUDE_DIRS}")
foreach(dir IN LISTS INCLUDE_DIRS)
  list(APPEND flags "-I${dir}")
endforeach()

function(dependencies header out)
  # An empty translation unit that includes `header` first (-include), so nothing is written.
  execute_process(COMMAND "${CXX}" ${flags} -include "${header}" /dev/null OUTPUT_VARIABLE deps
                  ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${CXX} -M on <${header}> failed: ${err}")
  endif()
  string(REGEX REPLACE "[ \\\\\n]+" ";" deps "${deps}")
  set(${out} "${deps}" PARENT_SCOPE)
endfunction()

function(reaches deps file out)
  set(found FALSE)
  foreach(d IN LISTS deps)
    if(d MATCHES "/${file}$")
      set(found TRUE)
      break()
    endif()
  endforeach()
  set(${out} ${found} PARENT_SCOPE)
endfunction()

set(failures "")
set(checked 0)
foreach(rule IN LISTS rules required)
  string(REPLACE "|" ";" parts "${rule}")
  list(POP_FRONT parts header)
  string(REPLACE "," ";" parts "${parts}")
  string(REPLACE "." "\\." parts "${parts}")
  dependencies("${header}" deps)
  list(FIND required "${rule}" is_required)
  foreach(f IN LISTS parts)
    reaches("${deps}" "${f}" found)
    string(REPLACE "\\." "." name "${f}")
    if(is_required EQUAL -1 AND found)
      list(APPEND failures "<${header}> includes ${name}")
    elseif(NOT is_required EQUAL -1 AND NOT found)
      list(APPEND failures "<${header}> no longer includes ${name}")
    endif()
    math(EXPR checked "${checked} + 1")
  endforeach()
endforeach()
if(failures)
  list(JOIN failures "\n  " text)
  message(FATAL_ERROR "header layering broken:\n  ${text}")
endif()
message(STATUS "header layering: ${checked} checks hold")
