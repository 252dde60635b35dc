#include "server/server_cli.h"

int main(int argc, char** argv) { return nccl_triage::RunServerCli(argc, argv); }
