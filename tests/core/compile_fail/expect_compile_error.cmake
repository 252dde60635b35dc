# Runs the compiler on ids.cc once per case and checks the outcome: CASE_VALID must compile (so
# the other cases cannot pass on an unrelated error), CASE_UNKNOWN_ID and CASE_LITERAL_COMPARISON
# must fail with the message that names the mistake.
#
#   cmake -DCXX=<compiler> -DINCLUDE=<repo>/agent -DSOURCE=<this folder>/ids.cc -P expect_compile_error.cmake
#
# Another file passes its own cases and name: -DEXPECTATIONS="CASE_A|regex;CASE_B|regex"
# -DNAME=<what the success line calls it> (plus -DEXTRA_FLAGS for more include directories).
foreach(var CXX INCLUDE SOURCE)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "expect_compile_error.cmake: -D${var}=... is required")
  endif()
endforeach()

function(compile case result_var output_var)
  separate_arguments(extra UNIX_COMMAND "${EXTRA_FLAGS}")
  execute_process(COMMAND ${CXX} -std=c++20 -fsyntax-only -D${case} -I${INCLUDE} ${extra} ${SOURCE}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(${result_var} ${rc} PARENT_SCOPE)
  set(${output_var} "${out}${err}" PARENT_SCOPE)
endfunction()

set(failures "")
compile(CASE_VALID rc out)
if(NOT rc EQUAL 0)
  string(APPEND failures "CASE_VALID does not compile:\n${out}\n")
endif()

# case, then a regex its compiler output must match (g++ and clang word the errors differently,
# both name the function or say "deleted").
if(NOT DEFINED EXPECTATIONS)
  set(EXPECTATIONS "CASE_UNKNOWN_ID|ThisIdIsNotInTheCatalogue" "CASE_LITERAL_COMPARISON|deleted")
endif()
if(NOT DEFINED NAME)
  set(NAME ids)
endif()
foreach(expectation ${EXPECTATIONS})
  string(REPLACE "|" ";" parts "${expectation}")
  list(GET parts 0 case)
  list(GET parts 1 regex)
  compile(${case} rc out)
  if(rc EQUAL 0)
    string(APPEND failures "${case} compiled; it must not\n")
  elseif(NOT out MATCHES "${regex}")
    string(APPEND failures "${case} failed without '${regex}':\n${out}\n")
  else()
    message(STATUS "${case}: refused as expected (${regex})")
  endif()
endforeach()

if(failures)
  message(FATAL_ERROR "${failures}")
endif()
message(STATUS "${NAME}: every case as expected")
