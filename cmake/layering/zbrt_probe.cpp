// Layering probe: must compile with zbrt's include directories.
#include "zbrt/zbrt.h"
int main() { return 0; }
