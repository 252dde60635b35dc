// The Go programs of the tests (tests/helm/chartcheck, tests/deploy/deploycheck), built with
// scripts/go.sh by their ctest fixtures.
module nccl-triage/tests

go 1.25

require gopkg.in/yaml.v3 v3.0.1
