#include "core/model.h"

namespace nccl_triage {

int Severity(CheckStatus s) {
  switch (s) {
    case CheckStatus::kFail:
      return 3;
    case CheckStatus::kWarn:
      return 2;
    case CheckStatus::kPass:
      return 1;
    case CheckStatus::kSkip:
      return 0;
  }
  return 0;
}

}  // namespace nccl_triage
