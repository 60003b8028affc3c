// The unit tests' main: Catch2's session (v2's CATCH_CONFIG_RUNNER, or v3, which needs no macro).
#define CATCH_CONFIG_RUNNER
#include "mlpd_catch.h"

int main(int argc, char* argv[]) { return Catch::Session().run(argc, argv); }
