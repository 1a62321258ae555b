//===- Support.cpp - Diagnostics, debug logging, statistics, numerics -----===//
//
// Implementation of the services declared in fusec/Support/Support.h.
//
//===----------------------------------------------------------------------===//
#include "fusec/Support/Support.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/WithColor.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <charconv>
#include <cmath>
#include <cstring>
#include <mutex>
#include <unistd.h>

using namespace fusec;

//===----------------------------------------------------------------------===//
// DiagEngine
//===----------------------------------------------------------------------===//

/// Prints `file:line:col: kind: message`, the source line and a caret line.
/// Done here rather than by SMDiagnostic::print because the spec's rules
/// differ from LLVM's: only `\n` ends a line (LLVM also starts a line after
/// a lone `\r`), and the caret must appear even when the line holds
/// non-ASCII bytes (LLVM then omits it). Tabs expand to multiples of 8 in
/// both lines, as LLVM does; other control bytes print as `\xNN`; columns
/// count bytes.
static void printLocatedMessage(llvm::raw_ostream &os, llvm::SourceMgr &sourceMgr,
                                llvm::SMLoc loc, llvm::SourceMgr::DiagKind kind,
                                const std::string &message,
                                llvm::ArrayRef<llvm::SMRange> ranges) {
  unsigned bufferId = sourceMgr.FindBufferContainingLoc(loc);
  const llvm::MemoryBuffer *buffer = sourceMgr.getMemoryBuffer(bufferId);
  const char *begin = buffer->getBufferStart(), *end = buffer->getBufferEnd();
  const char *point = loc.getPointer();
  const char *lineStart = point;
  while (lineStart > begin && lineStart[-1] != '\n')
    --lineStart;
  const char *lineEnd = point;
  while (lineEnd < end && *lineEnd != '\n')
    ++lineEnd;
  if (lineEnd > lineStart && lineEnd[-1] == '\r') // the \r of \r\n
    --lineEnd;
  unsigned line = sourceMgr.FindLineNumber(loc, bufferId);
  const char *kindName = kind == llvm::SourceMgr::DK_Error     ? "error"
                         : kind == llvm::SourceMgr::DK_Warning ? "warning"
                                                               : "note";
  os << buffer->getBufferIdentifier() << ":" << line << ":"
     << (point - lineStart + 1) << ": " << kindName << ": " << message << "\n";
  // The underline covers the first range on this line after the caret.
  const char *underlineEnd = point + 1;
  for (const llvm::SMRange &range : ranges)
    if (range.Start.getPointer() == point)
      underlineEnd = std::min(range.End.getPointer(), lineEnd);
  std::string source, caret;
  for (const char *p = lineStart; p < lineEnd; ++p) {
    unsigned char c = static_cast<unsigned char>(*p);
    bool continuation = (c & 0xC0) == 0x80;
    if (c == '\t') {
      size_t width = 8 - source.size() % 8;
      source.append(width, ' ');
      if (p < point)
        caret.append(width, ' ');
      continue;
    }
    if (c != '\r' && (c < 0x20 || c == 0x7f)) {
      // Echoed raw, a NUL or an escape byte would garble the terminal; it
      // shows as `\xNN`, four columns wide, with the caret under the `\`.
      static const char digits[] = "0123456789abcdef";
      source += std::string("\\x") + digits[c >> 4] + digits[c & 0xf];
      caret += p < point ? "    " : p == point ? "^" : p < underlineEnd ? "~~~~" : "";
      continue;
    }
    source += c == '\r' ? ' ' : char(c);
    if (continuation)
      continue; // one display column per UTF-8 character
    if (p < point)
      caret += ' ';
    else if (p == point)
      caret += '^';
    else if (p < underlineEnd)
      caret += '~';
  }
  if (point >= lineEnd)
    caret += '^';
  os << source << "\n" << caret << "\n";
}

void DiagEngine::report(llvm::SMLoc loc, llvm::SourceMgr::DiagKind kind,
                        const llvm::Twine &message,
                        llvm::ArrayRef<llvm::SMRange> ranges) {
  if (kind == llvm::SourceMgr::DK_Error)
    ++errorCount;
  if (!loc.isValid() || !sourceMgr.FindBufferContainingLoc(loc)) {
    llvm::SMDiagnostic diag("fusec", kind, message.str());
    if (handler)
      return handler(diag);
    diag.print(nullptr, llvm::errs(), /*ShowColors=*/false);
    return;
  }
  if (handler)
    return handler(sourceMgr.GetMessage(loc, kind, message, ranges, {}));
  printLocatedMessage(llvm::errs(), sourceMgr, loc, kind, message.str(), ranges);
}

void DiagEngine::error(llvm::SMLoc loc, const llvm::Twine &message,
                       llvm::ArrayRef<llvm::SMRange> ranges) {
  report(loc, llvm::SourceMgr::DK_Error, message, ranges);
}

void DiagEngine::warning(llvm::SMLoc loc, const llvm::Twine &message) {
  report(loc, llvm::SourceMgr::DK_Warning, message, {});
}

void DiagEngine::note(llvm::SMLoc loc, const llvm::Twine &message) {
  report(loc, llvm::SourceMgr::DK_Note, message, {});
}

//===----------------------------------------------------------------------===//
// Debug logging
//===----------------------------------------------------------------------===//

namespace {
struct DebugState {
  llvm::StringSet<> enabledTypes;
  bool all = false;
  std::shared_ptr<spdlog::logger> logger;

  DebugState() {
    logger = spdlog::stderr_color_st("fusec", spdlog::color_mode::never);
    logger->set_pattern("[%l] %v");
    logger->set_level(spdlog::level::warn);
  }
};
} // namespace

static DebugState &debugState() {
  static DebugState state;
  return state;
}

bool fusec::setLogLevel(llvm::StringRef level) {
  static const std::pair<const char *, spdlog::level::level_enum> levels[] = {
      {"trace", spdlog::level::trace}, {"debug", spdlog::level::debug},
      {"info", spdlog::level::info},   {"warn", spdlog::level::warn},
      {"error", spdlog::level::err},   {"off", spdlog::level::off}};
  for (const auto &[name, value] : levels) {
    if (level == name) {
      debugState().logger->set_level(value);
      return true;
    }
  }
  return false;
}

std::string fusec::setDebugOnly(llvm::StringRef commaSeparatedTypes,
                               llvm::function_ref<bool(llvm::StringRef)> isKnown) {
  llvm::SmallVector<llvm::StringRef, 4> types;
  commaSeparatedTypes.split(types, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef &type : types) {
    type = type.trim();
    if (type != "all" && type != "*" && !isKnown(type))
      return type.str();
  }
  for (llvm::StringRef type : types) {
    if (type == "all" || type == "*")
      debugState().all = true;
    else
      debugState().enabledTypes.insert(type);
  }
  if (debugState().logger->level() > spdlog::level::debug)
    debugState().logger->set_level(spdlog::level::debug);
  return "";
}

bool fusec::isDebugEnabled(llvm::StringRef debugType) {
  const DebugState &state = debugState();
  return state.all || state.enabledTypes.count(debugType);
}

void fusec::debugLog(llvm::StringRef debugType, const std::string &message) {
  debugState().logger->debug("[{}] {}", debugType.str(), message);
}

void fusec::logWarning(const std::string &message) {
  debugState().logger->warn("{}", message);
}

//===----------------------------------------------------------------------===//
// Statistics
//===----------------------------------------------------------------------===//

static std::vector<Statistic *> &statisticRegistry() {
  static std::vector<Statistic *> registry;
  return registry;
}

Statistic::Statistic(const char *debugType, const char *name,
                     const char *description)
    : debugType(debugType), name(name), description(description) {
  statisticRegistry().push_back(this);
}

static std::vector<Statistic *> sortedStatistics() {
  std::vector<Statistic *> stats = statisticRegistry();
  std::stable_sort(stats.begin(), stats.end(), [](Statistic *a, Statistic *b) {
    int byType = std::strcmp(a->debugType, b->debugType);
    return byType != 0 ? byType < 0 : std::strcmp(a->name, b->name) < 0;
  });
  return stats;
}

void fusec::printStatistics(llvm::raw_ostream &os,
                            const std::vector<ExtraStatistic> &extra) {
  os << "===" << std::string(73, '-') << "===\n"
     << "                        ... Pass statistics report ...\n"
     << "===" << std::string(73, '-') << "===\n";
  llvm::StringRef currentType;
  for (Statistic *stat : sortedStatistics()) {
    if (currentType != stat->debugType) {
      currentType = stat->debugType;
      os << currentType << "\n";
    }
    os << "  (S) " << stat->getValue() << " " << stat->name << " - "
       << stat->description << "\n";
  }
  std::string group;
  for (const ExtraStatistic &stat : extra) {
    if (stat.group != group) {
      group = stat.group;
      os << group << "\n";
    }
    os << "  (S) " << stat.value << " " << stat.name << " - " << stat.description << "\n";
  }
}

void fusec::printStatisticsJSON(llvm::raw_ostream &os,
                                const std::vector<ExtraStatistic> &extra) {
  os << "{";
  bool first = true;
  for (Statistic *stat : sortedStatistics()) {
    os << (first ? "\n" : ",\n") << "  \"" << stat->debugType << "."
       << stat->name << "\": " << stat->getValue();
    first = false;
  }
  for (const ExtraStatistic &stat : extra) {
    os << (first ? "\n" : ",\n") << "  \"" << stat.group << "." << stat.name
       << "\": " << stat.value;
    first = false;
  }
  os << "\n}\n";
}

void fusec::resetStatistics() {
  for (Statistic *stat : statisticRegistry())
    stat->reset();
}

//===----------------------------------------------------------------------===//
// Reduced-precision floats
//===----------------------------------------------------------------------===//

uint16_t fusec::floatToHalfBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  uint32_t sign = (bits >> 16) & 0x8000u;
  uint32_t absBits = bits & 0x7fffffffu;
  if (absBits >= 0x7f800000u) // inf or nan
    return sign | 0x7c00u | (absBits > 0x7f800000u ? 0x200u : 0u);
  if (absBits >= 0x477ff000u) // rounds to >= 65520: overflow to inf
    return sign | 0x7c00u;
  if (absBits < 0x38800000u) { // subnormal half or zero
    float magnitude;
    std::memcpy(&magnitude, &absBits, 4);
    // Scale so that the half subnormal unit (2^-24) becomes 1, then round
    // to nearest even through the float adder.
    float scaled = magnitude * 16777216.0f;
    uint32_t rounded = static_cast<uint32_t>(std::nearbyint(scaled));
    return sign | rounded;
  }
  uint32_t mantissa = absBits & 0x7fffffu;
  uint32_t exponent = (absBits >> 23) - 127 + 15;
  uint32_t half = (exponent << 10) | (mantissa >> 13);
  uint32_t remainder = mantissa & 0x1fffu;
  if (remainder > 0x1000u || (remainder == 0x1000u && (half & 1u)))
    ++half;
  return sign | half;
}

float fusec::halfBitsToFloat(uint16_t bits) {
  uint32_t sign = (bits & 0x8000u) << 16;
  uint32_t exponent = (bits >> 10) & 0x1fu;
  uint32_t mantissa = bits & 0x3ffu;
  float result;
  if (exponent == 0) {
    result = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -result : result;
  }
  uint32_t out;
  if (exponent == 31)
    out = sign | 0x7f800000u | (mantissa << 13);
  else
    out = sign | ((exponent - 15 + 127) << 23) | (mantissa << 13);
  std::memcpy(&result, &out, 4);
  return result;
}

uint16_t fusec::floatToBFloat16Bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) // nan stays a quiet nan
    return static_cast<uint16_t>((bits >> 16) | 0x40u);
  uint32_t roundingBias = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + roundingBias) >> 16);
}

float fusec::bfloat16BitsToFloat(uint16_t bits) {
  uint32_t out = static_cast<uint32_t>(bits) << 16;
  float result;
  std::memcpy(&result, &out, 4);
  return result;
}

std::string fusec::formatFloat(double value, bool forceFloatSyntax) {
  if (std::isnan(value))
    return "nan";
  if (std::isinf(value))
    return value < 0 ? "-inf" : "inf";
  char buffer[64];
  auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  std::string text(buffer, result.ptr);
  if (forceFloatSyntax &&
      text.find_first_of(".e") == std::string::npos)
    text += ".0";
  return text;
}

std::string fusec::findEmptyFlagValue(llvm::ArrayRef<RequiredValue> flags) {
  for (const auto &[option, what] : flags)
    if (option->getNumOccurrences() && option->empty())
      return (option->ArgStr.size() == 1 ? "-" : "--") + option->ArgStr.str() +
             " needs a value: " + what;
  return "";
}

static const char *outOfMemoryTool = "fusec";

/// Runs with the heap exhausted: writes without allocating and exits.
static void onOutOfMemory(void *, const char *, bool) {
  for (const char *part : {outOfMemoryTool, ": error: out of memory\n"}) {
    ssize_t written = ::write(STDERR_FILENO, part, std::strlen(part));
    (void)written;
  }
  _exit(1);
}

void fusec::exitOnOutOfMemory(const char *toolName) {
  outOfMemoryTool = toolName;
  llvm::remove_bad_alloc_error_handler();
  llvm::install_bad_alloc_error_handler(onOutOfMemory);
}

static const char *stdoutTool = "fusec";
static int returnedStatus = 0;

int fusec::exitStatus(int status) {
  returnedStatus = status;
  return status;
}

static void checkStdoutAtExit() {
  llvm::raw_fd_ostream &out = llvm::outs();
  out.flush();
  if (out.has_error()) {
    std::string reason = out.error().message();
    out.clear_error();
    llvm::errs() << stdoutTool << ": error: cannot write to stdout: " << reason << "\n";
    llvm::errs().flush();
    llvm::errs().clear_error();
    _exit(1);
  }
  // A diagnostic that could not be written (`2>/dev/full`, a closed
  // stderr) cannot be reported either; the exit status says it failed,
  // and why when the program said (2: usage, 3: internal).
  if (llvm::errs().has_error()) {
    llvm::errs().clear_error();
    _exit(returnedStatus != 0 ? returnedStatus : 1);
  }
}

/// SIGPIPE (the reader of stdout or stderr went away, `fusec ... | head`):
/// a failed write, exit 1, not LLVM's EX_IOERR (74).
static void onBrokenPipe() { _exit(1); }

void fusec::exitWithOneOnBrokenPipe() { llvm::sys::SetOneShotPipeSignalFunction(onBrokenPipe); }

void fusec::exitCleanlyOnStdoutError(const char *toolName) {
  stdoutTool = toolName;
  // Constructed first, so that their destructors run after the check.
  llvm::outs();
  llvm::errs();
  std::atexit(checkStdoutAtExit);
}
