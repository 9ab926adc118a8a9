// ge-run: execute a graph of C++ and Python custom ops (see ge_run.h).
#include <iostream>

#include "ge_run.h"

int main(int argc, char** argv) { return ge::tools::RunGeRun(argc, argv, std::cout, std::cerr); }
