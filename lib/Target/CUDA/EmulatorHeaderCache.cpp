//===- EmulatorHeaderCache.cpp - The emulator header, precompiled once ----===//
//
// Every `fusec-run --device=emulator` builds the module's CUDA C with the
// host compiler, and about 1.1 s of each build is parsing the emulator
// header with CUDA's f16/bf16 headers and the C++ library. A precompiled
// header (a GCC `.gch`, or Clang's) takes about 0.2 s, so it is built
// once and cached:
//   1. the cache directory is $FUSEC_CACHE_DIR, else $XDG_CACHE_HOME/fusec,
//      else $HOME/.cache/fusec; FUSEC_CACHE_DIR set to "" turns it off;
//   2. the entry's name hashes everything the precompiled form depends on:
//      the compiler (its real path, size and modification time), the build
//      flags, the CUDA headers (cuda_fp16.h's size and time) and the
//      emulator header's text; a changed input makes a new entry;
//   3. the first process to need an entry builds it under a lock file
//      (llvm::LockFileManager) into a temporary name and renames it into
//      place, so that a concurrent build never reads half a file; others
//      wait for it;
//   4. the module's build then passes `-include ENTRY/fusec_emulator.h`,
//      which the compiler replaces with the `.gch` beside it.
// A cache is only ever a shortcut: where it cannot be built, or a build
// with it fails, the caller builds from the header's text instead
// (EmulatedRun.cpp), so the results never depend on it.
//
//===----------------------------------------------------------------------===//
#include "EmulatorHeaderCache.h"

#include "fusec/Support/FileIO.h"
#include "fusec/Target/CUDA.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/LockFileManager.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/xxhash.h"

#include <cstdlib>
#include <unistd.h>

using namespace fusec;

std::string cuda::getEmulatorCacheDirectory() {
  if (const char *dir = getenv("FUSEC_CACHE_DIR"))
    return dir; // "" turns the cache off
  llvm::SmallString<256> root;
  if (const char *xdg = getenv("XDG_CACHE_HOME"); xdg && *xdg)
    root = xdg;
  else if (const char *home = getenv("HOME"); home && *home)
    llvm::sys::path::append(root, home, ".cache");
  else
    return "";
  llvm::sys::path::append(root, "fusec");
  return std::string(root);
}

/// "path size mtime" of `path` after symlinks (`c++` is usually a chain of
/// them to the real compiler); "" when it cannot be read.
static std::string describeFile(const std::string &path) {
  llvm::SmallString<256> real;
  llvm::sys::fs::file_status status;
  if (llvm::sys::fs::real_path(path, real) || llvm::sys::fs::status(real, status))
    return "";
  return std::string(real) + " " + std::to_string(status.getSize()) + " " +
         std::to_string(llvm::sys::toTimeT(status.getLastModificationTime()));
}

/// Builds `precompiled` from `headerText` (written to `header`) unless
/// another process does; whether it is there afterwards.
static bool buildEntry(const std::string &compiler, const std::vector<std::string> &flags,
                       llvm::StringRef headerText, llvm::StringRef header,
                       llvm::StringRef precompiled) {
  llvm::LockFileManager lock(precompiled);
  switch (lock.getState()) {
  case llvm::LockFileManager::LFS_Error:
    return false;
  case llvm::LockFileManager::LFS_Shared:
    lock.waitForUnlock(120);
    return llvm::sys::fs::exists(precompiled);
  case llvm::LockFileManager::LFS_Owned:
    break;
  }
  if (llvm::sys::fs::exists(precompiled)) // built while we took the lock
    return true;
  std::string suffix = ".tmp" + std::to_string(getpid());
  std::string headerTemp = header.str() + suffix, output = precompiled.str() + suffix;
  if (!writeFile(headerTemp, headerText).empty() ||
      llvm::sys::fs::rename(headerTemp, header)) {
    llvm::sys::fs::remove(headerTemp);
    return false;
  }
  bool built =
      cuda::runHostCompiler(compiler, flags, {"-x", "c++-header", header, "-o", output}, "") == 0;
  if (built && !llvm::sys::fs::rename(output, precompiled))
    return true;
  llvm::sys::fs::remove(output);
  return false;
}

int cuda::runHostCompiler(const std::string &compiler, const std::vector<std::string> &flags,
                          llvm::ArrayRef<llvm::StringRef> more, llvm::StringRef log,
                          std::string *message) {
  std::vector<llvm::StringRef> arguments = {compiler};
  arguments.insert(arguments.end(), flags.begin(), flags.end());
  arguments.insert(arguments.end(), more.begin(), more.end());
  llvm::Optional<llvm::StringRef> redirects[] = {llvm::None, log, log};
  return llvm::sys::ExecuteAndWait(compiler, arguments, llvm::None, redirects, 0, 0, message);
}

std::string cuda::getCachedEmulatorHeader(const std::string &compiler,
                                          const std::vector<std::string> &flags,
                                          const std::string &cudaPath,
                                          llvm::StringRef headerText) {
  std::string root = getEmulatorCacheDirectory();
  std::string compilerKey = describeFile(compiler),
              cudaKey = describeFile(cudaPath + "/include/cuda_fp16.h");
  if (root.empty() || compilerKey.empty() || cudaKey.empty())
    return "";
  std::string key = compilerKey + "\n" + cudaKey + "\n";
  for (const std::string &flag : flags)
    key += flag + "\n";
  uint64_t hash = llvm::xxHash64(key + headerText.str());
  char name[32];
  snprintf(name, sizeof(name), "emulator-%016llx", static_cast<unsigned long long>(hash));
  llvm::SmallString<256> entry(root), header, precompiled;
  llvm::sys::path::append(entry, name);
  header = entry;
  llvm::sys::path::append(header, "fusec_emulator.h");
  precompiled = header;
  precompiled += ".gch";
  if (llvm::sys::fs::exists(precompiled) && llvm::sys::fs::exists(header))
    return std::string(header);
  if (llvm::sys::fs::create_directories(entry))
    return "";

  if (buildEntry(compiler, flags, headerText, header, precompiled))
    return std::string(header);
  // Leave no entry behind: a compiler that failed here may work next time.
  llvm::sys::fs::remove(header);
  llvm::sys::fs::remove(entry); // only if empty (another process's lock)
  return "";
}
