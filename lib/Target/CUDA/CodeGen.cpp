//===- CodeGen.cpp - Lowered kernels to CUDA C ----------------------------===//
//
// One `extern "C" __global__` function per launch, statement for statement:
//   1. parameters: inputs (const, __restrict__), outputs, scratch buffers,
//      then symbolic dims (64-bit); the block and thread variables are
//      blockIdx.x / threadIdx.x; shared buffers are `__shared__` arrays,
//      locals are per-thread arrays (registers after unrolling);
//   2. a `parallel` region is a plain block every thread runs; `barrier` is
//      __syncthreads(); a shuffle is __shfl_xor_sync / __shfl_down_sync over
//      the full warp (the lowering emits shuffles only where every thread
//      of the block runs them);
//   3. values compute in float (f16/bf16/f32, rounded to their dtype after
//      every operation, as the interpreter does), int or 64-bit integers;
//      buffers hold the storage types (__half, __nv_bfloat16, ...);
//   4. a vector loop loads each contiguous, unconditionally read operand
//      with one 16-byte (or narrower) access into a register array,
//      computes the lanes unrolled, and stores a contiguous result with one
//      access; other operands are read per lane (classifyLaneAccess, the
//      same rule the interpreter counts by);
//   5. async_copy / async_commit / async_wait are cp.async, its
//      commit_group and wait_group (a plain copy before sm_80); mma and
//      ldmatrix are mma.sync and ldmatrix, through prelude functions
//      (fc_mma_f16, fc_ldmatrix_x4, ...) that a host compiler takes from the
//      emulator header instead (docs/emulator.md).
//
//===----------------------------------------------------------------------===//
#include "fusec/Target/CUDA.h"

#include "llvm/ADT/StringSet.h"

#include <cmath>
#include <cstdio>
#include <set>

using namespace fusec;
using namespace fusec::cuda;

static std::string sanitize(llvm::StringRef name) {
  std::string out;
  for (char c : name)
    out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0])))
    out = "_" + out;
  return out;
}

std::string cuda::getEntryName(const Kernel &kernel, size_t index) {
  // `_kernel` keeps entry points apart from C functions (`exp`). Distinct
  // kernel names must stay distinct: characters other than letters, digits
  // and `_` are spelled `_xHH_` (hex), and so are a leading digit (not an
  // identifier's start) and a `_` before an `x` (`@a_x2e_b` is not `@a.b`:
  // an unescaped `_` is then never followed by `x`, so every `_x` starts a
  // spelled character and the spelling reads back one way).
  std::string base;
  const std::string &name = kernel.name;
  for (size_t i = 0; i < name.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(name[i]);
    bool plain = std::isalnum(c) || c == '_';
    if (i == 0 && std::isdigit(c))
      plain = false;
    if (c == '_' && i + 1 < name.size() && name[i + 1] == 'x')
      plain = false;
    if (plain) {
      base += char(c);
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "_x%02x_", c);
      base += hex;
    }
  }
  base += "_kernel";
  return kernel.launches.size() > 1 ? base + std::to_string(index) : base;
}

std::vector<EntryParam> cuda::getEntryParams(const Kernel &kernel) {
  std::vector<EntryParam> params;
  for (const KBuffer &buffer : kernel.inputs)
    params.push_back({EntryParam::Input, buffer.name, buffer.type});
  for (const KBuffer &buffer : kernel.outputs)
    params.push_back({EntryParam::Output, buffer.name, buffer.type});
  for (const KBuffer &buffer : kernel.internals)
    params.push_back({EntryParam::Scratch, buffer.name, buffer.type});
  for (const std::string &dim : kernel.getSymbolicDims())
    params.push_back({EntryParam::Dim, dim, Type()});
  return params;
}

int64_t cuda::getSharedBytes(const LLaunch &launch) {
  int64_t bytes = 0;
  for (const KBuffer &buffer : launch.buffers)
    if (buffer.role == KBuffer::Shared) {
      int64_t elements = 1;
      for (const Dim &dim : buffer.type.getShape())
        elements *= dim.size;
      bytes += elements * dtypeBytes(buffer.type.getDType());
    }
  return bytes;
}

bool cuda::hasTensorCoreMma(llvm::StringRef arch) {
  unsigned number = 0;
  return !arch.consume_front("sm_") || arch.getAsInteger(10, number) || number >= 80;
}

static bool usesMma(const std::vector<LStmt> &stmts) {
  for (const LStmt &stmt : stmts)
    if (stmt.kind == LStmt::Mma || usesMma(stmt.body) || usesMma(stmt.elseBody))
      return true;
  return false;
}

const Kernel *cuda::findMmaKernel(const Module &module) {
  for (const auto &kernel : module.kernels)
    for (const LLaunch &launch : kernel->launches)
      if (usesMma(launch.body))
        return kernel.get();
  return nullptr;
}

namespace {

const char *storageType(DType dtype) {
  switch (dtype) {
  case DType::f32: return "float";
  case DType::f16: return "__half";
  case DType::bf16: return "__nv_bfloat16";
  case DType::i8: return "signed char";
  case DType::i32: return "int";
  case DType::i64: return "fc_i64";
  case DType::boolean: return "bool";
  }
  return "float";
}

bool isFloat(DType dtype) {
  return dtype == DType::f32 || dtype == DType::f16 || dtype == DType::bf16;
}

/// `x` (in compute type) rounded to what `dtype` holds.
std::string rounded(const std::string &x, DType dtype) {
  switch (dtype) {
  case DType::f16: return "fc_r_f16(" + x + ")";
  case DType::bf16: return "fc_r_bf16(" + x + ")";
  case DType::i8: return "fc_r_i8(" + x + ")";
  default: return x;
  }
}

std::string toStorage(const std::string &x, DType dtype) {
  switch (dtype) {
  case DType::f16: return "__float2half_rn(" + x + ")";
  case DType::bf16: return "__float2bfloat16_rn(" + x + ")";
  case DType::i8: return "(signed char)(" + x + ")";
  default: return x;
  }
}

/// An integer constant in C: `LL` where `wide` (an i64, or beyond int's
/// range); -2^63 as an expression, since `-9223372036854775808LL` negates
/// a literal nvcc reads as unsigned.
std::string intLiteral(int64_t value, bool wide) {
  if (value == INT64_MIN)
    return "(-9223372036854775807LL - 1)";
  wide |= value > INT32_MAX || value < INT32_MIN;
  return std::to_string(value) + (wide ? "LL" : "");
}

std::string floatLiteral(double value) {
  if (std::isnan(value))
    return "FC_NAN";
  if (std::isinf(value))
    return value > 0 ? "FC_INF" : "(-FC_INF)";
  char text[64];
  std::snprintf(text, sizeof text, "%.9g", value);
  std::string out = text;
  if (out.find_first_of(".e") == std::string::npos)
    out += ".0";
  return (value < 0 ? "(" + out + "f)" : out + "f");
}

bool isIndexNode(const KExpr &e) {
  return e.kind == KExpr::IntConst || e.kind == KExpr::Var || e.isIndexArith() ||
         e.isPredicate() || (e.kind == KExpr::Select && e.dtype == DType::i64);
}

/// Whether an index expression is known not to be negative (all variables
/// and dims are), so that floordiv and mod are C's `/` and `%`.
bool nonNegative(const KExpr &e) {
  switch (e.kind) {
  case KExpr::IntConst: return e.intValue >= 0;
  case KExpr::Var: return true;
  case KExpr::Add:
  case KExpr::Mul:
  case KExpr::FloorDiv:
  case KExpr::Mod:
  case KExpr::Min:
  case KExpr::Max:
    return nonNegative(*e.args[0]) && nonNegative(*e.args[1]);
  default: return false;
  }
}

class KernelEmitter {
public:
  explicit KernelEmitter(const Kernel &kernel) : kernel(kernel) {}
  std::string emit();

private:
  std::string cName(const std::string &key, const std::string &name) {
    auto it = names.find(key);
    if (it != names.end())
      return it->second;
    static const std::set<std::string> reserved = {
        "int", "float", "double", "char", "bool", "long", "short", "signed", "unsigned",
        "if", "else", "for", "while", "do", "return", "const", "auto", "void", "true",
        "false", "switch", "case", "break", "continue", "goto", "static", "struct",
        "class", "union", "enum", "new", "delete", "this", "template", "typename",
        "volatile", "register", "extern", "inline", "sizeof", "default", "min", "max",
        "blockIdx", "threadIdx", "blockDim", "gridDim", "warpSize", "NAN", "INFINITY",
        // The rest of C++'s keywords, and CUDA's and the prelude's names.
        "alignas", "alignof", "asm", "catch", "char16_t", "char32_t", "char8_t", "concept",
        "consteval", "constexpr", "constinit", "const_cast", "co_await", "co_return",
        "co_yield", "decltype", "dynamic_cast", "explicit", "export", "friend", "mutable",
        "namespace", "noexcept", "nullptr", "operator", "private", "protected", "public",
        "reinterpret_cast", "requires", "static_assert", "static_cast", "thread_local",
        "throw", "try", "typedef", "typeid", "using", "virtual", "wchar_t", "and", "or",
        "not", "xor", "bitand", "bitor", "compl", "and_eq", "or_eq", "xor_eq", "not_eq",
        "half", "nv_bfloat16", "uint2", "uint4", "float2", "float4", "int2", "int4",
        "dim3", "size_t", "assert"};
    std::string base = sanitize(name);
    // Identifiers with `_` first are the implementation's (`__shared__`,
    // `_Pragma`), and names without a lowercase letter may be macros
    // (`NDEBUG`, `FC_INF`); single letters (`N`) are safe.
    bool macroLike = base.size() > 1 && llvm::none_of(base, [](char c) { return std::islower(c); });
    if (base[0] == '_')
      base = "v" + base;
    else if (reserved.count(base) || llvm::StringRef(base).startswith("fc_") || macroLike)
      base = "v_" + base;
    std::string candidate = base;
    for (int suffix = 1; taken.count(candidate); ++suffix)
      candidate = base + "_" + std::to_string(suffix);
    taken.insert(candidate);
    return names[key] = candidate;
  }
  std::string bufferName(const std::string &name) { return cName("%" + name, name); }
  std::string varName(const std::string &name) { return cName(name, name); }

  std::string index(const KExpr &e);
  std::string value(const KExpr &e);
  std::string any(const KExpr &e) { return isIndexNode(e) ? index(e) : value(e); }
  std::string offset(const std::string &buffer, const std::vector<KExprPtr> &indices);
  std::string dimText(const Dim &dim) {
    return dim.isSymbolic() ? varName(dim.symbol) : std::to_string(dim.size) + "LL";
  }
  void line(const std::string &text) { out += std::string(2 * depth, ' ') + text + "\n"; }
  void emitStmt(const LStmt &stmt);
  void emitVectorLoop(const LStmt &stmt);
  void emitLaunch(const LLaunch &launch, size_t index);

  const Kernel &kernel;
  std::map<std::string, std::string> names;
  std::set<std::string> taken;
  std::string out;
  int depth = 0;
  /// Inside a vector loop: loads served from a register array.
  std::map<const KExpr *, std::string> laneLoads;
  int vectorCount = 0;
};

std::string KernelEmitter::offset(const std::string &buffer,
                                  const std::vector<KExprPtr> &indices) {
  const KBuffer *declared = kernel.findBuffer(buffer);
  const Shape &shape = declared->type.getShape();
  if (indices.empty())
    return "0";
  // Indices computed from loaded data (gathers) are clamped into the buffer.
  auto component = [&](size_t d) {
    std::string text = index(*indices[d]);
    if (hasLoad(*indices[d]))
      text = "fc_clamp(" + text + ", " + dimText(shape[d]) + ")";
    return text;
  };
  std::string text = component(0);
  for (size_t d = 1; d < indices.size(); ++d)
    text = "(" + text + ") * " + dimText(shape[d]) + " + " + component(d);
  return text;
}

std::string KernelEmitter::index(const KExpr &e) {
  switch (e.kind) {
  case KExpr::IntConst: // operands of 64-bit variables: plain ints promote
    return intLiteral(e.intValue, false);
  case KExpr::Var:
    return varName(e.name);
  case KExpr::Load:
  case KExpr::Call:
  case KExpr::Cast:
  case KExpr::Literal:
    return "((fc_i64)" + value(e) + ")";
  case KExpr::Select:
    return "(" + any(*e.args[0]) + " ? " + index(*e.args[1]) + " : " + index(*e.args[2]) + ")";
  case KExpr::Not:
    return "(!" + any(*e.args[0]) + ")";
  case KExpr::FloorDiv:
  case KExpr::Mod: {
    std::string a = index(*e.args[0]), b = index(*e.args[1]);
    if (nonNegative(e))
      return "(" + a + (e.kind == KExpr::FloorDiv ? " / " : " % ") + b + ")";
    return std::string(e.kind == KExpr::FloorDiv ? "fc_floordiv(" : "fc_mod(") + a + ", " +
           b + ")";
  }
  case KExpr::Min:
  case KExpr::Max: {
    std::string a = index(*e.args[0]), b = index(*e.args[1]);
    return "(" + a + (e.kind == KExpr::Min ? " < " : " > ") + b + " ? " + a + " : " + b + ")";
  }
  default: {
    static const std::map<KExpr::Kind, const char *> infix = {
        {KExpr::Add, " + "}, {KExpr::Sub, " - "}, {KExpr::Mul, " * "},
        {KExpr::Lt, " < "},  {KExpr::Le, " <= "}, {KExpr::Gt, " > "},
        {KExpr::Ge, " >= "}, {KExpr::Eq, " == "}, {KExpr::Ne, " != "},
        {KExpr::And, " && "}, {KExpr::Or, " || "}};
    // Index arithmetic is int64 arithmetic: a value read from an i8/i32
    // buffer (a gather index) is widened first, or `%a[i] * 65536` would
    // overflow an int.
    auto operand = [&](const KExpr &arg) { return e.isIndexArith() ? index(arg) : any(arg); };
    return "(" + operand(*e.args[0]) + infix.at(e.kind) + operand(*e.args[1]) + ")";
  }
  }
}

std::string KernelEmitter::value(const KExpr &e) {
  if (isIndexNode(e))
    return index(e);
  switch (e.kind) {
  case KExpr::Literal:
    if (e.dtype == DType::boolean)
      return e.floatValue != 0 ? "true" : "false";
    if (isFloat(e.dtype))
      return floatLiteral(e.floatValue);
    return e.intValue == INT64_MIN ? intLiteral(e.intValue, true) // parenthesized already
                                   : "(" + intLiteral(e.intValue, e.dtype == DType::i64) + ")";
  case KExpr::Load: {
    auto lane = laneLoads.find(&e);
    if (lane != laneLoads.end())
      return lane->second;
    return "fc_ld(" + bufferName(e.name) + "[" + offset(e.name, e.args) + "])";
  }
  case KExpr::Call: {
    std::string text = "fc_" + e.name + "(";
    for (size_t i = 0; i < e.args.size(); ++i)
      text += (i ? ", " : "") + value(*e.args[i]);
    return rounded(text + ")", e.dtype);
  }
  case KExpr::Cast: {
    const KExpr &source = *e.args[0];
    std::string x = any(source);
    DType from = isIndexNode(source) ? DType::i64 : source.dtype;
    if (e.dtype == DType::boolean)
      return "(" + x + " != 0)";
    if (isFloat(e.dtype) && isFloat(from))
      return rounded(x, e.dtype);
    if (isFloat(e.dtype)) { // from an integer: rounded once, as the interpreter does
      std::string wide = "(fc_i64)(" + x + ")";
      if (e.dtype == DType::f16)
        return "__half2float(__ll2half_rn(" + wide + "))";
      if (e.dtype == DType::bf16)
        return "__bfloat162float(__ll2bfloat16_rn(" + wide + "))";
      return "(float)" + wide;
    }
    std::string wide = isFloat(from) ? "fc_f2i((double)(" + x + "))" : "(fc_i64)(" + x + ")";
    switch (e.dtype) {
    case DType::i8: return "fc_r_i8(" + wide + ")";
    case DType::i32: return "fc_r_i32(" + wide + ")";
    default: return wide;
    }
  }
  case KExpr::Select:
    return "(" + any(*e.args[0]) + " ? " + value(*e.args[1]) + " : " + value(*e.args[2]) + ")";
  default:
    return index(e);
  }
}

/// Loads read whatever the lanes compute (not under a select branch, not
/// inside another load's index): these may be read ahead as vectors.
void collectUnconditionalLoads(const KExpr &e, std::vector<const KExpr *> &loads) {
  if (e.kind == KExpr::Load) {
    loads.push_back(&e);
    return;
  }
  if (e.kind == KExpr::Select) {
    collectUnconditionalLoads(*e.args[0], loads);
    return;
  }
  if (e.kind == KExpr::And || e.kind == KExpr::Or) {
    collectUnconditionalLoads(*e.args[0], loads);
    return;
  }
  for (const KExprPtr &arg : e.args)
    collectUnconditionalLoads(*arg, loads);
}

const char *vectorType(int64_t bytes) {
  switch (bytes) {
  case 16: return "uint4";
  case 8: return "uint2";
  case 4: return "unsigned int";
  case 2: return "unsigned short";
  default: return "unsigned char";
  }
}

/// Copies the `bytes` (a power of two) of one lane array between `to` and
/// `from` (addresses): one access up to 16 bytes, else 16-byte pieces. The
/// vector width follows the store, so an operand wider than the output
/// (f32 read into f16) spans several 16-byte pieces.
static std::vector<std::string> vectorCopy(const std::string &to, const std::string &from,
                                           int64_t bytes) {
  if (bytes <= 16) {
    std::string vec = vectorType(bytes);
    return {"*reinterpret_cast<" + vec + " *>(" + to + ") = *reinterpret_cast<const " + vec +
            " *>(" + from + ");"};
  }
  std::vector<std::string> lines;
  for (int64_t piece = 0; piece < bytes / 16; ++piece)
    lines.push_back("reinterpret_cast<uint4 *>(" + to + ")[" + std::to_string(piece) +
                    "] = reinterpret_cast<const uint4 *>(" + from + ")[" +
                    std::to_string(piece) + "];");
  return lines;
}

void KernelEmitter::emitVectorLoop(const LStmt &stmt) {
  int64_t width = stmt.extent->intValue;
  std::string lane = varName(stmt.var);
  std::map<std::string, KExprPtr> atLaneZero = {{stmt.var, KExpr::intConst(0)}};
  line("{");
  ++depth;
  for (const LStmt &store : stmt.body) {
    std::vector<const KExpr *> loads;
    collectUnconditionalLoads(*store.value, loads);
    for (const KExpr *load : loads) {
      const Type &type = kernel.findBuffer(load->name)->type;
      if (laneLoads.count(load) ||
          classifyLaneAccess(load->args, type, stmt.var, width) != LaneAccess::Contiguous)
        continue;
      std::string reg = "fc_vec" + std::to_string(vectorCount++);
      std::vector<KExprPtr> first;
      for (const KExprPtr &index : load->args)
        first.push_back(substituteVars(index, atLaneZero));
      line("alignas(16) " + std::string(storageType(type.getDType())) + " " + reg + "[" +
           std::to_string(width) + "];");
      for (const std::string &text :
           vectorCopy(reg, "&" + bufferName(load->name) + "[" + offset(load->name, first) + "]",
                      width * dtypeBytes(type.getDType())))
        line(text);
      laneLoads[load] = "fc_ld(" + reg + "[" + lane + "])";
    }
    const Type &type = kernel.findBuffer(store.buffer)->type;
    bool contiguous =
        classifyLaneAccess(store.indices, type, stmt.var, width) == LaneAccess::Contiguous;
    std::string result = "fc_vec" + std::to_string(vectorCount++);
    if (contiguous)
      line("alignas(16) " + std::string(storageType(type.getDType())) + " " + result + "[" +
           std::to_string(width) + "];");
    line("#pragma unroll");
    line("for (int " + lane + " = 0; " + lane + " < " + std::to_string(width) + "; ++" + lane +
         ") {");
    ++depth;
    std::string computed = toStorage(value(*store.value), type.getDType());
    if (contiguous)
      line(result + "[" + lane + "] = " + computed + ";");
    else
      line(bufferName(store.buffer) + "[" + offset(store.buffer, store.indices) + "] = " +
           computed + ";");
    --depth;
    line("}");
    if (contiguous) {
      std::vector<KExprPtr> first;
      for (const KExprPtr &index : store.indices)
        first.push_back(substituteVars(index, atLaneZero));
      for (const std::string &text :
           vectorCopy("&" + bufferName(store.buffer) + "[" + offset(store.buffer, first) + "]",
                      result, width * dtypeBytes(type.getDType())))
        line(text);
    }
  }
  laneLoads.clear();
  --depth;
  line("}");
}

void KernelEmitter::emitStmt(const LStmt &stmt) {
  switch (stmt.kind) {
  case LStmt::Parallel:
    line("{");
    ++depth;
    for (const LStmt &inner : stmt.body)
      emitStmt(inner);
    --depth;
    line("}");
    return;
  case LStmt::Barrier:
    line("__syncthreads();");
    return;
  case LStmt::Shuffle: {
    DType dtype = kernel.findBuffer(stmt.buffer)->type.getDType();
    bool narrow = dtype == DType::boolean || dtype == DType::i8;
    std::string source = bufferName(stmt.value->name) + "[" +
                         offset(stmt.value->name, stmt.value->args) + "]";
    line(bufferName(stmt.buffer) + "[" + offset(stmt.buffer, stmt.indices) + "] = " +
         (narrow ? "(" + std::string(storageType(dtype)) + ")" : "") + "__shfl_" +
         stmt.shuffleMode + "_sync(0xffffffffu, " + (narrow ? "(int)" : "") + source + ", " +
         std::to_string(stmt.shuffleOffset) + ");");
    return;
  }
  case LStmt::Mma: {
    // The fragments' registers, as PTX wants them: A and B as 32-bit pairs
    // of f16/bf16, C and D as floats (layout: docs/ir.md).
    DType dtype = kernel.findBuffer(stmt.operands[0]->name)->type.getDType();
    auto element = [&](const KExpr &load, int64_t i) {
      return bufferName(load.name) + "[" + std::to_string(load.args[0]->intValue + i) + "]";
    };
    auto words = [&](const KExpr &load, int64_t count) {
      std::string text;
      for (int64_t i = 0; i < count; ++i)
        text += ", fc_pack2(" + element(load, 2 * i) + ", " + element(load, 2 * i + 1) + ")";
      return text;
    };
    std::string d, c;
    for (int64_t i = 0; i < 4; ++i) {
      d += std::string(i ? ", " : "") + bufferName(stmt.buffer) + "[" +
           std::to_string(stmt.indices[0]->intValue + i) + "]";
      c += ", " + element(*stmt.operands[2], i);
    }
    line(std::string(dtype == DType::bf16 ? "fc_mma_bf16(" : "fc_mma_f16(") + d + ",");
    line("    " + words(*stmt.operands[0], 4).substr(2) + words(*stmt.operands[1], 2) + c + ");");
    return;
  }
  case LStmt::LdMatrix: {
    // One ldmatrix per warp: each lane passes its row's shared address;
    // register m holds the lane's two elements of matrix m.
    std::string count = std::to_string(stmt.count), registers;
    for (int64_t m = 0; m < stmt.count; ++m)
      registers += "fc_ldm[" + std::to_string(m) + "], ";
    line("{");
    ++depth;
    line("unsigned fc_ldm[" + count + "];");
    line("fc_ldmatrix_x" + count + "<" + (stmt.transpose ? "true" : "false") + ">(" + registers +
         "&" + bufferName(stmt.value->name) + "[" + offset(stmt.value->name, stmt.value->args) +
         "]);");
    int64_t base = stmt.indices[0]->intValue;
    for (int64_t m = 0; m < stmt.count; ++m)
      line("fc_unpack2(fc_ldm[" + std::to_string(m) + "], " + bufferName(stmt.buffer) + "[" +
           std::to_string(base + 2 * m) + "], " + bufferName(stmt.buffer) + "[" +
           std::to_string(base + 2 * m + 1) + "]);");
    --depth;
    line("}");
    return;
  }
  case LStmt::AsyncCopy: {
    DType dtype = kernel.findBuffer(stmt.buffer)->type.getDType();
    int64_t bytes = stmt.count * dtypeBytes(dtype);
    std::string valid = index(*stmt.extent);
    std::string source = bufferName(stmt.value->name);
    line("fc_cp_async<" + std::to_string(bytes) + ">(&" + bufferName(stmt.buffer) + "[" +
         offset(stmt.buffer, stmt.indices) + "], " + valid + " > 0 ? &" + source + "[" +
         offset(stmt.value->name, stmt.value->args) + "] : " + source + ", (int)(" + valid +
         ") * " + std::to_string(dtypeBytes(dtype)) + ");");
    return;
  }
  case LStmt::AsyncCommit:
    line("fc_cp_async_commit();");
    return;
  case LStmt::AsyncWait:
    line("fc_cp_async_wait<" + std::to_string(stmt.count) + ">();");
    return;
  case LStmt::For: {
    if (stmt.loopKind == LStmt::Vector)
      return emitVectorLoop(stmt);
    std::string var = varName(stmt.var);
    if (stmt.loopKind == LStmt::Unroll)
      line("#pragma unroll");
    line("for (fc_i64 " + var + " = 0; " + var + " < " + index(*stmt.extent) + "; ++" + var +
         ") {");
    ++depth;
    for (const LStmt &inner : stmt.body)
      emitStmt(inner);
    --depth;
    line("}");
    return;
  }
  case LStmt::If:
    line("if (" + any(*stmt.cond) + ") {");
    ++depth;
    for (const LStmt &inner : stmt.body)
      emitStmt(inner);
    --depth;
    if (!stmt.elseBody.empty()) {
      line("} else {");
      ++depth;
      for (const LStmt &inner : stmt.elseBody)
        emitStmt(inner);
      --depth;
    }
    line("}");
    return;
  case LStmt::Store: {
    DType dtype = kernel.findBuffer(stmt.buffer)->type.getDType();
    const KExpr &stored = *stmt.value;
    // A load stored as it is (tile staging, fragments) copies the storage
    // value: no round trip through float.
    bool copy = stored.kind == KExpr::Load && !laneLoads.count(&stored) &&
                kernel.findBuffer(stored.name)->type.getDType() == dtype;
    line(bufferName(stmt.buffer) + "[" + offset(stmt.buffer, stmt.indices) + "] = " +
         (copy ? bufferName(stored.name) + "[" + offset(stored.name, stored.args) + "]"
               : toStorage(value(stored), dtype)) +
         ";");
    return;
  }
  }
}

void KernelEmitter::emitLaunch(const LLaunch &launch, size_t index) {
  std::string params;
  for (const EntryParam &param : getEntryParams(kernel)) {
    if (!params.empty())
      params += ", ";
    if (param.kind == EntryParam::Dim) {
      params += "fc_i64 " + varName(param.name);
      continue;
    }
    params += std::string(param.kind == EntryParam::Input ? "const " : "") +
              storageType(param.type.getDType()) + " *__restrict__ " + bufferName(param.name);
  }
  line("extern \"C\" __global__ void __launch_bounds__(" + std::to_string(launch.threads) +
       ") " + getEntryName(kernel, index) + "(" + params + ") {");
  ++depth;
  line("const fc_i64 " + varName(launch.blockVar) + " = blockIdx.x;");
  line("const fc_i64 " + varName(launch.threadVar) + " = threadIdx.x;");
  for (const KBuffer &buffer : launch.buffers) {
    int64_t elements = 1;
    for (const Dim &dim : buffer.type.getShape())
      elements *= dim.size;
    // 16-byte alignment: a vector loop may access them as uint4.
    line(std::string("alignas(16) ") + (buffer.role == KBuffer::Shared ? "__shared__ " : "") +
         storageType(buffer.type.getDType()) + " " + bufferName(buffer.name) + "[" +
         std::to_string(std::max<int64_t>(elements, 1)) + "];");
  }
  for (const LStmt &stmt : launch.body)
    emitStmt(stmt);
  --depth;
  line("}");
  line("");
}

std::string KernelEmitter::emit() {
  out = "// kernel @" + kernel.name + "\n";
  std::vector<std::string> dims = kernel.getSymbolicDims();
  for (size_t i = 0; i < kernel.launches.size(); ++i) {
    // Loop variables are scoped per launch; buffer and dim names per kernel.
    std::map<std::string, std::string> kept;
    for (const auto &[key, name] : names)
      if (key[0] == '%' || std::find(dims.begin(), dims.end(), key) != dims.end())
        kept[key] = name;
    names = kept;
    taken.clear();
    for (const auto &[key, name] : names)
      taken.insert(name);
    emitLaunch(kernel.launches[i], i);
  }
  return out;
}

} // namespace

bool cuda::generateCUDA(const std::vector<const Kernel *> &kernels, std::string &source,
                        std::string &error,
                        std::vector<std::pair<int, std::string>> *kernelLines) {
  source = getPrelude();
  for (const Kernel *kernel : kernels) {
    if (!kernel->isLowered()) {
      error = "kernel '@" + kernel->name +
              "' is not lowered; CUDA code is generated from the output of 'lower' "
              "(run a pipeline that ends with 'lower', such as -O1)";
      return false;
    }
    if (kernelLines)
      kernelLines->push_back(
          {int(std::count(source.begin(), source.end(), '\n')) + 1, kernel->name});
    source += KernelEmitter(*kernel).emit();
  }
  return true;
}

bool cuda::generateCUDA(const Module &module, std::string &source, std::string &error,
                        std::vector<std::pair<int, std::string>> *kernelLines) {
  std::vector<const Kernel *> kernels;
  for (const auto &kernel : module.kernels)
    kernels.push_back(kernel.get());
  return generateCUDA(kernels, source, error, kernelLines);
}

std::string cuda::kernelAtLine(const std::vector<std::pair<int, std::string>> &kernelLines,
                               int line) {
  std::string found;
  for (const auto &[first, name] : kernelLines)
    if (first <= line)
      found = name;
  return found;
}
