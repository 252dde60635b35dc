#include "planner/node_info.h"

namespace nccl_triage {

std::string ToString(const NodePair& p) { return p.a + "<->" + p.b; }

}  // namespace nccl_triage
