//===- EmulatorCacheTest.cpp - Where the emulator's header cache lives ----===//
//
// docs/emulator.md, "The header cache": FUSEC_CACHE_DIR, then
// XDG_CACHE_HOME/fusec, then HOME/.cache/fusec; FUSEC_CACHE_DIR set empty
// turns the cache off. (test/Target/CUDA/emulator-cache.test checks that a
// build fills and uses it.)
//
//===----------------------------------------------------------------------===//
#include "fusec/Target/CUDA.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <optional>
#include <string>

namespace {

/// Sets (or, with nullopt, unsets) an environment variable for one scope.
class ScopedEnvironment {
public:
  ScopedEnvironment(const char *name, std::optional<std::string> value) : name(name) {
    if (const char *old = getenv(name))
      saved = old;
    if (value)
      setenv(name, value->c_str(), 1);
    else
      unsetenv(name);
  }
  ~ScopedEnvironment() {
    if (saved)
      setenv(name, saved->c_str(), 1);
    else
      unsetenv(name);
  }

private:
  const char *name;
  std::optional<std::string> saved;
};

} // namespace

TEST_CASE("the emulator's header cache directory", "[cuda][emulator]") {
  using fusec::cuda::getEmulatorCacheDirectory;
  ScopedEnvironment home("HOME", "/home/user"), xdg("XDG_CACHE_HOME", "/xdg"),
      explicitDir("FUSEC_CACHE_DIR", "/explicit/dir");
  CHECK(getEmulatorCacheDirectory() == "/explicit/dir");
  {
    ScopedEnvironment off("FUSEC_CACHE_DIR", "");
    CHECK(getEmulatorCacheDirectory() == "");
  }
  ScopedEnvironment noExplicitDir("FUSEC_CACHE_DIR", std::nullopt);
  CHECK(getEmulatorCacheDirectory() == "/xdg/fusec");
  {
    ScopedEnvironment emptyXdg("XDG_CACHE_HOME", ""); // empty counts as unset
    CHECK(getEmulatorCacheDirectory() == "/home/user/.cache/fusec");
  }
  ScopedEnvironment noXdg("XDG_CACHE_HOME", std::nullopt);
  CHECK(getEmulatorCacheDirectory() == "/home/user/.cache/fusec");
  ScopedEnvironment noHome("HOME", std::nullopt);
  CHECK(getEmulatorCacheDirectory() == "");
}
