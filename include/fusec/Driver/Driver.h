//===- Driver.h - The fusec command-line driver ------------------*- C++ -*-===//
//
// `fusec INPUT [-o OUT] [options]` (spec §7). Exit codes: 0 success; 1 bad
// input (diagnostic printed); 2 usage error; 3 internal error.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_DRIVER_DRIVER_H
#define FUSEC_DRIVER_DRIVER_H

namespace fusec {

enum ExitCode { ExitSuccess = 0, ExitInputError = 1, ExitUsageError = 2,
                ExitInternalError = 3 };

/// Parses the command line, runs the pipeline and writes the output.
int driverMain(int argc, char **argv);

} // namespace fusec

#endif // FUSEC_DRIVER_DRIVER_H
