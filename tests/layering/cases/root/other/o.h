#pragma once
inline int Other() { return 1; }
