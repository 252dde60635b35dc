# The tests' Kubernetes tools and Go programs, declared once for tests/helm, tests/deploy and
# tests/k8s (included by each; the first include registers the fixtures):
#   NCCL_TRIAGE_GO         scripts/go.sh: the Go >= 1.25 toolchain (never Debian's 1.19)
#   NCCL_TRIAGE_K8S_TOOLS  the cache directory of scripts/k8s-tools.sh (bin/helm, bin/kubectl, ...)
#   NCCL_TRIAGE_K8S_WORK   the directory of the test cluster (kubeconfig, ca.crt, env)
#   fixture k8s_tools      builds the tools once (cached outside the build tree)
#   fixture k8s_cluster    etcd + kube-apiserver on 127.0.0.1 (tests/k8s/cluster.sh), one for all
#   fixture go_tools       tests/go.mod's programs: chartcheck, deploycheck
include_guard(GLOBAL)

set(k8s_pins ${PROJECT_SOURCE_DIR}/tools/k8s/go.mod ${PROJECT_SOURCE_DIR}/tools/k8s/go.sum
    ${PROJECT_SOURCE_DIR}/scripts/k8s-tools.sh)
set_property(DIRECTORY ${PROJECT_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${k8s_pins})
execute_process(COMMAND ${PROJECT_SOURCE_DIR}/scripts/k8s-tools.sh --dir
                OUTPUT_VARIABLE tools_dir OUTPUT_STRIP_TRAILING_WHITESPACE COMMAND_ERROR_IS_FATAL ANY)
set(NCCL_TRIAGE_K8S_TOOLS ${tools_dir} CACHE INTERNAL "built Kubernetes tools")
set(NCCL_TRIAGE_GO ${PROJECT_SOURCE_DIR}/scripts/go.sh CACHE INTERNAL "the Go toolchain")
set(NCCL_TRIAGE_K8S_WORK ${CMAKE_BINARY_DIR}/k8s-cluster CACHE INTERNAL "test cluster directory")

# The first run builds the tools (minutes; README, "Development"), later runs find them cached.
add_test(NAME k8s.tools COMMAND ${PROJECT_SOURCE_DIR}/scripts/k8s-tools.sh)
set_tests_properties(k8s.tools PROPERTIES FIXTURES_SETUP k8s_tools TIMEOUT 3600)

add_test(NAME k8s.cluster.start
         COMMAND ${PROJECT_SOURCE_DIR}/tests/k8s/cluster.sh start ${NCCL_TRIAGE_K8S_TOOLS} ${NCCL_TRIAGE_K8S_WORK})
set_tests_properties(k8s.cluster.start PROPERTIES FIXTURES_SETUP k8s_cluster FIXTURES_REQUIRED k8s_tools
                     TIMEOUT 300)
add_test(NAME k8s.cluster.stop COMMAND ${PROJECT_SOURCE_DIR}/tests/k8s/cluster.sh stop ${NCCL_TRIAGE_K8S_WORK})
set_tests_properties(k8s.cluster.stop PROPERTIES FIXTURES_CLEANUP k8s_cluster TIMEOUT 60)

set(go_out ${CMAKE_BINARY_DIR}/go-tools)
add_test(NAME go.build
         COMMAND ${CMAKE_COMMAND} -E env GOFLAGS=-mod=readonly
                 ${NCCL_TRIAGE_GO} build -o ${go_out}/ ./helm/chartcheck ./deploy/deploycheck
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/tests)
set_tests_properties(go.build PROPERTIES FIXTURES_SETUP go_tools TIMEOUT 600)
set(NCCL_TRIAGE_CHARTCHECK ${go_out}/chartcheck CACHE INTERNAL "tests/helm/chartcheck")
set(NCCL_TRIAGE_DEPLOYCHECK ${go_out}/deploycheck CACHE INTERNAL "tests/deploy/deploycheck")
