#include "other/o.h"
#include "pure/p.h"
