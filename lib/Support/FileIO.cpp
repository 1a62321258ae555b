//===- FileIO.cpp - Reading the files fusec is given ----------------------===//
#include "fusec/Support/FileIO.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

using namespace fusec;

static std::unique_ptr<llvm::MemoryBuffer> readStdin(std::string &error, uint64_t limit) {
  // MemoryBuffer::getSTDIN has no limit: `fusec - < /dev/zero` would end in
  // an out-of-memory abort rather than a diagnostic.
  llvm::sys::fs::file_t handle = llvm::sys::fs::getStdinHandle();
  llvm::SmallVector<char, 0> bytes;
  constexpr size_t chunk = size_t(1) << 20;
  while (true) {
    size_t size = bytes.size();
    bytes.resize_for_overwrite(size + chunk);
    llvm::Expected<size_t> got =
        llvm::sys::fs::readNativeFile(handle, llvm::makeMutableArrayRef(bytes.data() + size, chunk));
    if (!got) {
      error = "cannot read stdin: " + llvm::toString(got.takeError());
      return nullptr;
    }
    bytes.truncate(size + *got);
    if (*got == 0)
      break;
    if (bytes.size() > limit) {
      error = "stdin holds more than " +
              (limit % (uint64_t(1) << 30) ? std::to_string(limit) + " bytes"
                                           : std::to_string(limit >> 30) + " GiB") +
              "; give a file instead";
      return nullptr;
    }
  }
  return llvm::MemoryBuffer::getMemBufferCopy(llvm::StringRef(bytes.data(), bytes.size()),
                                              "<stdin>");
}

std::unique_ptr<llvm::MemoryBuffer> fusec::readFile(llvm::StringRef path, std::string &error,
                                                    bool isText, bool allowStdin,
                                                    uint64_t stdinLimit) {
  if (allowStdin && path == "-")
    return readStdin(error, stdinLimit);
  llvm::sys::fs::file_status status;
  // A path that cannot be stat'ed is left to getFile, whose error names the
  // reason (no such file, permission denied).
  if (!llvm::sys::fs::status(path, status) && status.type() != llvm::sys::fs::file_type::regular_file) {
    error = "not a regular file";
    return nullptr;
  }
  auto buffer = llvm::MemoryBuffer::getFile(path, isText);
  if (!buffer) {
    error = buffer.getError().message();
    return nullptr;
  }
  return std::move(*buffer);
}

std::string fusec::writeFile(llvm::StringRef path, llvm::StringRef contents, bool binary) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, binary ? llvm::sys::fs::OF_None : llvm::sys::fs::OF_Text);
  std::string target = path == "-" ? "to stdout" : "'" + path.str() + "'";
  if (ec)
    return "cannot write " + target + ": " + ec.message();
  os << contents;
  if (path == "-")
    os.flush(); // stdout stays open
  else
    os.close();
  if (!os.has_error())
    return "";
  std::string reason = os.error().message();
  os.clear_error();
  return "cannot write " + target + ": " + reason;
}

std::string fusec::rebasePath(llvm::StringRef path, llvm::StringRef from, llvm::StringRef to) {
  namespace fs = llvm::sys::fs;
  namespace sp = llvm::sys::path;
  if (sp::is_absolute(path))
    return path.str();
  auto normalized = [](llvm::StringRef directory) {
    llvm::SmallString<256> text(directory.empty() ? "." : directory);
    fs::make_absolute(text);
    sp::remove_dots(text, /*remove_dot_dot=*/true);
    return text;
  };
  llvm::SmallString<256> fromDirectory = normalized(from), toDirectory = normalized(to);
  if (fromDirectory == toDirectory)
    return path.str();
  llvm::SmallString<256> target = fromDirectory;
  sp::append(target, path);
  sp::remove_dots(target, /*remove_dot_dot=*/true);
  llvm::SmallVector<llvm::StringRef, 16> targetParts(sp::begin(target), sp::end(target));
  llvm::SmallVector<llvm::StringRef, 16> baseParts(sp::begin(toDirectory), sp::end(toDirectory));
  size_t common = 0;
  while (common < targetParts.size() - 1 && common < baseParts.size() &&
         targetParts[common] == baseParts[common])
    ++common;
  llvm::SmallString<256> result;
  for (size_t k = common; k < baseParts.size(); ++k)
    sp::append(result, "..");
  for (size_t k = common; k < targetParts.size(); ++k)
    sp::append(result, targetParts[k]);
  return std::string(result);
}
