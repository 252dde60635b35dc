#include <fstream>

#include "other/o.h"
