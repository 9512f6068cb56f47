// Layering probe: must compile with ZBSchedule's include directories.
#include "zb/Schedule/Schedule.h"
int main() { return 0; }
