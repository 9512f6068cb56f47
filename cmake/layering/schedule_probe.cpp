// Layering probe: must compile with ZBSchedule's include directories
// (ZBLayering.ZBSchedule.own); lib/Support, below the scheduler, must NOT see
// it (ZBLayering.ZBSupport.no-schedule).
#include "zb/Schedule/Schedule.h"
int main() { return 0; }
