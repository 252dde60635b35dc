#include "other/o.h"
