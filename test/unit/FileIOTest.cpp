//===- FileIOTest.cpp - Reading inputs: regular files and stdin -----------===//
#include "fusec/Support/FileIO.h"

#include <catch2/catch.hpp>

#include <unistd.h>

using namespace fusec;

/// Runs `read` with `bytes` waiting on stdin (a pipe), then restores stdin.
template <typename Read>
static void withStdin(const std::string &bytes, Read read) {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  // The pipe's buffer (64 KiB on Linux) holds these small inputs whole, so
  // one thread can write them all before reading.
  REQUIRE(write(fds[1], bytes.data(), bytes.size()) == ssize_t(bytes.size()));
  close(fds[1]);
  int saved = dup(0);
  dup2(fds[0], 0);
  close(fds[0]);
  read();
  dup2(saved, 0);
  close(saved);
}

TEST_CASE("stdin is read whole below the limit", "[support][file]") {
  withStdin("func @f() -> () {}\n", [] {
    std::string error;
    auto buffer = readFile("-", error, /*isText=*/true, /*allowStdin=*/true, 1000);
    REQUIRE(buffer);
    CHECK(buffer->getBuffer() == "func @f() -> () {}\n");
    CHECK(buffer->getBufferIdentifier() == "<stdin>");
  });
}

TEST_CASE("stdin beyond the limit is refused, not read on", "[support][file]") {
  withStdin(std::string(4096, 'x'), [] {
    std::string error;
    CHECK_FALSE(readFile("-", error, /*isText=*/true, /*allowStdin=*/true, 1000));
    CHECK(error == "stdin holds more than 1000 bytes; give a file instead");
  });
}

TEST_CASE("only regular files are read", "[support][file]") {
  std::string error;
  // /dev/zero never ends: reading it whole would exhaust memory.
  CHECK_FALSE(readFile("/dev/zero", error));
  CHECK(error == "not a regular file");
  CHECK_FALSE(readFile("/", error));
  CHECK(error == "not a regular file");
  CHECK_FALSE(readFile("/no/such/file.fir", error));
  CHECK(error == "No such file or directory");
  // Without allowStdin, `-` is a file name like any other.
  CHECK_FALSE(readFile("-", error));
  CHECK(error == "No such file or directory");
}

TEST_CASE("rebasePath makes a path relative to another directory", "[support][file]") {
  CHECK(rebasePath("w.npy", "/a/models", "/a/build/out") == "../../models/w.npy");
  CHECK(rebasePath("weights/w.npy", "/a", "/a/b") == "../weights/w.npy");
  CHECK(rebasePath("../w.npy", "/a/b", "/a") == "w.npy");
  CHECK(rebasePath("./w.npy", "/a/./b/..", "/a") == "./w.npy"); // the same directory: as written
  CHECK(rebasePath("/data/w.npy", "/a", "/b") == "/data/w.npy");
  CHECK(rebasePath("w.npy", "/", "/x/y") == "../../w.npy");
}
