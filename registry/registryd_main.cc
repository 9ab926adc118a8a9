// ge-plugin-registryd: the machine-wide plugin registry daemon (see registryd.h).
#include <iostream>

#include "registryd.h"

int main(int argc, char** argv) { return ge::registry::RunRegistryd(argc, argv, std::cout, std::cerr); }
