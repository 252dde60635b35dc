#include "cmd_nccl_triage/cli.h"

int main(int argc, char** argv) { return nccl_triage::RunCli(argc, argv); }
