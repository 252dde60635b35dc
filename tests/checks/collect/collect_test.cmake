# The collector of NT_HOST_CHECK declarations (cmake/collect_host_checks.cmake) on small trees:
# rows in position order whatever the file names, semicolons and UTF-8 kept; a position used
# twice, a declaration without its end, a malformed one, a check in a file not named after its id
# and a tree without checks stop it with the file named.
#
#   cmake -DSCRIPT=<repo>/cmake/collect_host_checks.cmake -DWORK=<dir> -P collect_test.cmake
cmake_minimum_required(VERSION 3.25)
file(REMOVE_RECURSE ${WORK})
set(failures "")

function(collect dir out_var rc_var)
  execute_process(COMMAND ${CMAKE_COMMAND} -DCHECKS_DIR=${dir} -DOUT=${dir}/out -P ${SCRIPT}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(${out_var} "${out}${err}" PARENT_SCOPE)
  set(${rc_var} ${rc} PARENT_SCOPE)
endfunction()

# A good tree: shm_first.cc holds position 10, ib_second.cc (first by name) position 20, and a
# source file without a check (a shared utility).
file(WRITE ${WORK}/good/ib_second.cc "// x\n#include \"y\"\n\nnamespace n {\n\nNT_HOST_CHECK(IbSecond, 20,\n    CauseInfo{\"ib.second\", kIb, kHost, kNone, \"Second; with a semicolon\",\n              \"why\", \"fix\", \"looks\", \"verdict\"});\n\nFinding IbSecond() {}\n}\n")
file(WRITE ${WORK}/good/shm_first.cc "NT_HOST_CHECK(ShmFirst, 10, CauseInfo{\"shm.first\", kArch, kHost, kNone, \"Größe — ÷\", \"w\", \"f\", \"l\", \"v\"});\n")
file(WRITE ${WORK}/good/util.cc "int Helper() { return 1; }  // no NT_HOST_CHECK here\n")
collect(${WORK}/good out rc)
if(NOT rc EQUAL 0)
  string(APPEND failures "good tree refused:\n${out}\n")
else()
  file(READ ${WORK}/good/out/core/host_check_list.inc list)
  if(NOT list MATCHES "NT_HOST_CHECK_ENTRY\\(ShmFirst, \"shm.first\"\\)\nNT_HOST_CHECK_ENTRY\\(IbSecond, \"ib.second\"\\)\n$")
    string(APPEND failures "list not in position order:\n${list}\n")
  endif()
  file(READ ${WORK}/good/out/core/catalogue_host_checks.inc rows)
  string(FIND "${rows}" "CauseInfo{\"shm.first\", kArch, kHost, kNone, \"Größe — ÷\", \"w\", \"f\", \"l\", \"v\"},\n" first)
  string(FIND "${rows}" "\"Second; with a semicolon\",\n              \"why\", \"fix\", \"looks\", \"verdict\"},\n" second)
  if(first EQUAL -1 OR second EQUAL -1 OR NOT first LESS second)
    string(APPEND failures "rows not copied whole, in position order:\n${rows}\n")
  endif()
endif()

# Refusals, each with the message that names the mistake.
file(WRITE ${WORK}/twice/ib_a.cc "NT_HOST_CHECK(IbA, 10, CauseInfo{\"ib.a\", kIb, kHost, kNone, \"t\", \"w\", \"f\", \"l\", \"v\"});\n")
file(WRITE ${WORK}/twice/ib_b.cc "NT_HOST_CHECK(IbB, 10, CauseInfo{\"ib.b\", kIb, kHost, kNone, \"t\", \"w\", \"f\", \"l\", \"v\"});\n")
file(WRITE ${WORK}/open/ib_a.cc "NT_HOST_CHECK(IbA, 10, CauseInfo{\"ib.a\", kIb, kHost, kNone, \"t\", \"w\"\n")
file(WRITE ${WORK}/malformed/ib_a.cc "NT_HOST_CHECK(ib_a, 10, CauseInfo{\"ib.a\", kIb});\n")
file(WRITE ${WORK}/empty/a.cc "int x;\n")
file(WRITE ${WORK}/misplaced/ib_other.cc "NT_HOST_CHECK(IbA, 10, CauseInfo{\"ib.a\", kIb, kHost, kNone, \"t\", \"w\", \"f\", \"l\", \"v\"});\n")
foreach(case "twice|position 10 of ib.b is taken"
             "open|without its closing"
             "malformed|expected NT_HOST_CHECK\\(Function, position"
             "empty|no NT_HOST_CHECK in"
             "misplaced|the check ib.a belongs in ib_a.cc")
  string(REPLACE "|" ";" parts "${case}")
  list(GET parts 0 dir)
  list(GET parts 1 regex)
  collect(${WORK}/${dir} out rc)
  string(REGEX REPLACE "[ \n]+" " " out "${out}")  # CMake wraps long messages
  if(rc EQUAL 0)
    string(APPEND failures "${dir}: accepted\n")
  elseif(NOT out MATCHES "${regex}")
    string(APPEND failures "${dir}: refused without '${regex}':\n${out}\n")
  endif()
endforeach()

if(failures)
  message(FATAL_ERROR "${failures}")
endif()
message(STATUS "collect_host_checks: every case as expected")
