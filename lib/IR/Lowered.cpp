//===- Lowered.cpp - Printing the loop-level form -------------------------===//
//
//   launch grid(bx: floordiv(n + 255, 256)) block(tx: 256) {
//     shared %sum_shared: f32[1]
//     local %acc: f32[1]
//     parallel {
//       for r in serial(4) { ... }
//       if tx < 8 { %out[bx, tx] = ... } else { ... }
//     }
//     barrier
//     %acc_peer[0] = shfl_xor(%acc[0], 16)
//     parallel { %t[tx * 8] = async_copy(%x[bx, tx * 8], 8, 8) }
//     async_commit
//     async_wait(0)
//   }
//
//===----------------------------------------------------------------------===//
#include "fusec/IR/Kernel.h"

using namespace fusec;

static const char *loopKindName(LStmt::LoopKind kind) {
  switch (kind) {
  case LStmt::Serial: return "serial";
  case LStmt::Unroll: return "unroll";
  case LStmt::Vector: return "vector";
  }
  return "serial";
}

static std::string printAccess(const std::string &buffer,
                               const std::vector<KExprPtr> &indices) {
  std::string text = "%" + buffer + "[";
  for (size_t i = 0; i < indices.size(); ++i)
    text += (i ? ", " : "") + printExpr(*indices[i]);
  return text + "]";
}

static void printStmt(const LStmt &stmt, int depth, std::string &text) {
  std::string indent(2 * depth, ' ');
  auto printBlock = [&](const std::vector<LStmt> &body) {
    for (const LStmt &inner : body)
      printStmt(inner, depth + 1, text);
  };
  switch (stmt.kind) {
  case LStmt::Parallel:
    text += indent + "parallel {\n";
    printBlock(stmt.body);
    text += indent + "}\n";
    return;
  case LStmt::Barrier:
    text += indent + "barrier\n";
    return;
  case LStmt::Shuffle:
    text += indent + printAccess(stmt.buffer, stmt.indices) + " = shfl_" +
            stmt.shuffleMode + "(" + printExpr(*stmt.value) + ", " +
            std::to_string(stmt.shuffleOffset) + ")\n";
    return;
  case LStmt::Mma:
    text += indent + printAccess(stmt.buffer, stmt.indices) + " = mma_m16n8k16(" +
            printExpr(*stmt.operands[0]) + ", " + printExpr(*stmt.operands[1]) + ", " +
            printExpr(*stmt.operands[2]) + ")\n";
    return;
  case LStmt::LdMatrix:
    text += indent + printAccess(stmt.buffer, stmt.indices) + " = ldmatrix_x" +
            std::to_string(stmt.count) + (stmt.transpose ? "_trans(" : "(") +
            printExpr(*stmt.value) + ")\n";
    return;
  case LStmt::AsyncCopy:
    text += indent + printAccess(stmt.buffer, stmt.indices) + " = async_copy(" +
            printExpr(*stmt.value) + ", " + std::to_string(stmt.count) + ", " +
            printExpr(*stmt.extent) + ")\n";
    return;
  case LStmt::AsyncCommit:
    text += indent + "async_commit\n";
    return;
  case LStmt::AsyncWait:
    text += indent + "async_wait(" + std::to_string(stmt.count) + ")\n";
    return;
  case LStmt::For:
    text += indent + "for " + stmt.var + " in " + loopKindName(stmt.loopKind) + "(" +
            printExpr(*stmt.extent) + ") {\n";
    printBlock(stmt.body);
    text += indent + "}\n";
    return;
  case LStmt::If:
    text += indent + "if " + printExpr(*stmt.cond) + " {\n";
    printBlock(stmt.body);
    if (!stmt.elseBody.empty()) {
      text += indent + "} else {\n";
      printBlock(stmt.elseBody);
    }
    text += indent + "}\n";
    return;
  case LStmt::Store:
    text += indent + printAccess(stmt.buffer, stmt.indices) + " = " +
            printValueExpr(*stmt.value, stmt.value->dtype) + "\n";
    return;
  }
}

std::string fusec::printLaunch(const LLaunch &launch) {
  std::string text = "  launch grid(" + launch.blockVar + ": " +
                     printExpr(*launch.gridSize) + ") block(" + launch.threadVar +
                     ": " + std::to_string(launch.threads) + ") {\n";
  for (const KBuffer &buffer : launch.buffers)
    text += std::string("    ") + (buffer.role == KBuffer::Shared ? "shared" : "local") +
            " %" + buffer.name + ": " + buffer.type.str() + "\n";
  for (const LStmt &stmt : launch.body)
    printStmt(stmt, 2, text);
  return text + "  }\n";
}
