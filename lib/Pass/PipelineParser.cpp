//===- PipelineParser.cpp - Textual pass pipelines ------------------------===//
//
//   pipeline ::= element (',' element)*
//   element  ::= pass-name ('{' option ((',' | ' ') option)* '}')?
//   option   ::= key '=' (value | '"' quoted '"')
//
// The scanner is brace-aware: a value may itself hold braces (balanced), and
// commas inside braces separate options, not passes. A value that holds a
// comma, a space or an unbalanced brace (a file path) is written in double
// quotes, with `\"` and `\\` the only escapes, as in FIR strings. Errors carry
// the column so the driver can show the pipeline with a caret; a bad value
// points at the value.
//
//===----------------------------------------------------------------------===//
#include "fusec/Pass/Pass.h"

#include <cctype>
#include <set>

using namespace fusec;

namespace {
class PipelineParser {
public:
  PipelineParser(llvm::StringRef text, PipelineError &error)
      : text(text), error(error) {}

  std::unique_ptr<PassManager> parse();

private:
  bool fail(size_t column, std::string message) {
    error.column = column;
    error.message = std::move(message);
    return false;
  }
  void skipSpaces() {
    while (pos < text.size() && std::isspace(static_cast<unsigned char>(text[pos])))
      ++pos;
  }
  bool parseElement(PassManager &manager);
  bool parseOptions(Pass &pass);
  bool parseQuotedValue(std::string &value);

  llvm::StringRef text;
  PipelineError &error;
  size_t pos = 0;
};
} // namespace

static bool isPassNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
}

std::unique_ptr<PassManager> PipelineParser::parse() {
  auto manager = std::make_unique<PassManager>();
  skipSpaces();
  if (pos == text.size())
    return manager; // `--passes=` runs no pass
  while (true) {
    if (!parseElement(*manager))
      return nullptr;
    skipSpaces();
    if (pos == text.size())
      return manager;
    if (text[pos] != ',') {
      fail(pos, "expected ',' between passes, found '" +
                    std::string(1, text[pos]) + "'");
      return nullptr;
    }
    ++pos;
    skipSpaces();
  }
}

bool PipelineParser::parseElement(PassManager &manager) {
  size_t start = pos;
  while (pos < text.size() && isPassNameChar(text[pos]))
    ++pos;
  llvm::StringRef name = text.slice(start, pos);
  if (name.empty())
    return fail(start, pos < text.size()
                           ? "expected a pass name, found '" +
                                 std::string(1, text[pos]) + "'"
                           : "expected a pass name at the end of the pipeline");
  const PassInfo *info = lookupPassInfo(name);
  if (!info) {
    std::string best;
    unsigned bestDistance = 4;
    for (const PassInfo &candidate : getRegisteredPasses()) {
      unsigned distance = name.edit_distance(candidate.name, true, bestDistance);
      if (distance < bestDistance)
        bestDistance = distance, best = candidate.name;
    }
    return fail(start, "unknown pass '" + name.str() + "'" +
                           (best.empty() ? "" : "; did you mean '" + best + "'?"));
  }
  std::unique_ptr<Pass> pass = info->create();
  skipSpaces();
  if (pos < text.size() && text[pos] == '{' && !parseOptions(*pass))
    return false;
  manager.addPass(std::move(pass));
  return true;
}

bool PipelineParser::parseOptions(Pass &pass) {
  size_t open = pos++;
  std::set<std::string> given;
  while (true) {
    while (pos < text.size() && (text[pos] == ',' || std::isspace(
                                     static_cast<unsigned char>(text[pos]))))
      ++pos;
    if (pos == text.size())
      return fail(open, "unbalanced '{' in the options of pass '" +
                            pass.getName().str() + "'");
    if (text[pos] == '}') {
      ++pos;
      return true;
    }
    size_t keyStart = pos;
    while (pos < text.size() && isPassNameChar(text[pos]))
      ++pos;
    llvm::StringRef key = text.slice(keyStart, pos);
    if (key.empty())
      return fail(pos, "expected an option name, found '" +
                           std::string(1, text[pos]) + "'");
    if (pos == text.size() || text[pos] != '=')
      return fail(pos, "expected '=' after option '" + key.str() + "'");
    if (!given.insert(key.str()).second)
      return fail(keyStart, "option '" + key.str() + "' is given twice");
    size_t valueStart = ++pos;
    std::string value;
    if (pos < text.size() && text[pos] == '"') {
      if (!parseQuotedValue(value))
        return false;
    } else {
      int depth = 0;
      while (pos < text.size()) {
        char c = text[pos];
        if (c == '{')
          ++depth;
        else if (c == '}' && depth-- == 0)
          break;
        else if ((c == ',' || std::isspace(static_cast<unsigned char>(c))) &&
                 depth == 0)
          break;
        ++pos;
      }
      value = text.slice(valueStart, pos).str();
    }
    std::string problem = pass.setOption(key, value);
    if (!problem.empty())
      return fail(pass.hasOption(key) ? valueStart : keyStart, problem);
  }
}

bool PipelineParser::parseQuotedValue(std::string &value) {
  size_t open = pos++;
  while (pos < text.size()) {
    char c = text[pos++];
    if (c == '"') {
      // Checked here so that `a="x"y` points at the y, rather than being read
      // as an option `y` with no '='.
      if (pos < text.size() && text[pos] != ',' && text[pos] != '}' &&
          !std::isspace(static_cast<unsigned char>(text[pos])))
        return fail(pos, "expected ',', ' ' or '}' after a quoted value, found '" +
                             std::string(1, text[pos]) + "'");
      return true;
    }
    if (c == '\\') {
      if (pos < text.size() && (text[pos] == '"' || text[pos] == '\\')) {
        value += text[pos++];
        continue;
      }
      return fail(pos - 1, "unknown escape in a quoted value; only \\\" and \\\\ exist");
    }
    value += c;
  }
  return fail(open, "unterminated quoted value");
}

std::unique_ptr<PassManager> fusec::parsePassPipeline(llvm::StringRef text,
                                                      PipelineError &error) {
  return PipelineParser(text, error).parse();
}

std::string PassManager::str() const {
  std::string text;
  for (size_t i = 0; i < passes.size(); ++i)
    text += (i ? "," : "") + passes[i]->getName().str() +
            passes[i]->getOptionsString();
  return text;
}
