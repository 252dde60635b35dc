// The entry point of nccl-triage-services.so; the only symbol the module exports.
#include "services/services.h"

extern "C" __attribute__((visibility("default"))) const nccl_triage::Services*
ncclTriageServices() {
  return &nccl_triage::LinkedServices();
}
