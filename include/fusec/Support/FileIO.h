//===- FileIO.h - Reading the files fusec is given ---------------*- C++ -*-===//
//
// Every file fusec reads whole (inputs, pattern files, target descriptions,
// .npy weights, ONNX models) goes through `readFile`: a path that is not a
// regular file is refused, because LLVM reads a device or a FIFO until EOF
// and `/dev/zero` never ends (out of memory). Stdin (`-`) may be a pipe, so
// it is read up to a limit instead. Every file fusec writes goes through
// `writeFile`, which reports a failed write instead of aborting.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_SUPPORT_FILEIO_H
#define FUSEC_SUPPORT_FILEIO_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstdint>
#include <memory>
#include <string>

namespace fusec {

/// The most fusec reads from stdin (2 GiB); a larger input must be a file.
constexpr uint64_t kMaxStdinBytes = uint64_t(2) << 30;

/// Reads `path` whole (stdin for `-` when `allowStdin`). On failure returns
/// null and sets `error` to the reason alone ("not a regular file", "No such
/// file or directory"), for the caller to prefix with the path; for stdin, a
/// whole sentence ("stdin holds more than 2 GiB; give a file instead").
std::unique_ptr<llvm::MemoryBuffer> readFile(llvm::StringRef path, std::string &error,
                                             bool isText = false, bool allowStdin = false,
                                             uint64_t stdinLimit = kMaxStdinBytes);

/// Writes `contents` to `path` ("-": stdout) and closes it, checking that
/// every byte arrived (a full disk, /dev/full, a read-only /proc file):
/// LLVM's streams abort the process on an unchecked write error. Returns ""
/// or "cannot write 'PATH': REASON" ("cannot write to stdout: REASON").
std::string writeFile(llvm::StringRef path, llvm::StringRef contents, bool binary = false);

/// `path`, relative to directory `from`, made relative to directory `to`
/// (lexically, after making both absolute: `w.npy` from `models` to
/// `build/out` is `../../models/w.npy`). An absolute `path`, or one whose
/// directories are the same, is returned as written.
std::string rebasePath(llvm::StringRef path, llvm::StringRef from, llvm::StringRef to);

} // namespace fusec

#endif // FUSEC_SUPPORT_FILEIO_H
