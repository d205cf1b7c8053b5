#include "tests/harness/zkr_test.h"
static void add_suites(void) {}
int main(void) { return zkt_main("placeholder", add_suites); }
