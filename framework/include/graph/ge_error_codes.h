// graph/ge_error_codes.h: GE's second spelling of the graphStatus header.
//
// Upstream headers include either path; both give the same declarations.
#pragma once

#include "graph/error_codes.h"
