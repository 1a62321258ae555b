//===- Backend.cpp - CUDA C, PTX and cubin output -------------------------===//
//
// After the pipeline: CUDA C from the lowered module; for PTX and cubin,
// NVRTC compiles it in-process (cuda::compileModule: in parallel chunks
// linked by nvJitLink when the module has many kernels). A compile error is a bug of fusec's code
// generator (exit 3), reported with the kernel whose code failed and the
// compiler's message; a missing CUDA installation is an environment
// problem (exit 1) that names the places searched. Register, spill, stack
// and shared-memory figures per entry point come from ptxas's report and
// are shown by --stats.
//
//===----------------------------------------------------------------------===//
#include "Backend.h"
#include "fusec/Driver/Driver.h"

#include "fusec/Exec/Exec.h"
#include "fusec/IR/Pattern.h"
#include "fusec/Support/FileIO.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/WithColor.h"

using namespace fusec;

int fusec::runBackend(const Module &module, const BackendRequest &request,
                      std::string &output, std::vector<ExtraStatistic> &stats) {
  std::string source, error;
  // Graph ops left in a function have no kernel to generate, except where
  // a library runs the function.
  llvm::StringSet<> libraryBound = libraryBoundFunctions(module);
  for (const auto &function : module.functions) {
    if (libraryBound.count(function->name))
      continue;
    std::string op;
    function->forEachBinding([&](const Binding &binding) {
      if (op.empty() && binding.kind == ExprKind::Op)
        op = "'" + binding.headName() + "' (%" + binding.getResult()->name + ") in @" +
             function->name;
    });
    if (!op.empty()) {
      llvm::WithColor::error(llvm::errs(), "fusec")
          << (request.launcher.empty() ? "--emit=" + request.emit : std::string("--launcher"))
          << ": " << op
          << " is a graph op with no kernel; CUDA code is generated after 'legalize', "
             "'schedule' and 'lower' (run -O0, -O1 or -O2)\n";
      return ExitInputError;
    }
  }
  if (!cuda::generateCUDA(module, source, error)) {
    llvm::WithColor::error(llvm::errs(), "fusec") << error << "\n";
    return ExitInputError;
  }
  if (request.emit == "cuda" && request.launcher.empty()) {
    output += source;
    return ExitSuccess;
  }
  if (const Kernel *mma = cuda::findMmaKernel(module);
      mma && !cuda::hasTensorCoreMma(request.arch)) {
    llvm::WithColor::error(llvm::errs(), "fusec")
        << "kernel '@" << mma->name << "' computes on tensor cores (mma.sync m16n8k16), which "
        << request.arch << " does not have; compile for sm_80 or later, or schedule it with "
        << "schedule{tensor-cores=false} (-O0/-O1/-O2 do for --arch=" << request.arch << ")\n";
    return ExitInputError;
  }
  cuda::LaunchPlan plan;
  if (!request.launcher.empty()) {
    const Function *entry = findEntryFunction(module);
    if (!entry) {
      llvm::WithColor::error(llvm::errs(), "fusec") << "--launcher: the module has no entry "
                                                       "function (@main, or a function no "
                                                       "other calls)\n";
      return ExitInputError;
    }
    if (!cuda::buildLaunchPlan(module, *entry, plan, error)) {
      llvm::WithColor::error(llvm::errs(), "fusec") << "--launcher: " << error << "\n";
      return ExitInputError;
    }
    plan.name = request.name;
  }
  cuda::CompileOptions options;
  options.arch = request.arch;
  options.cudaPath = request.cudaPath;
  options.cubin = request.emit == "cubin" || !request.launcher.empty();
  cuda::CompileResult result;
  bool codegenBug = false;
  if (!cuda::compileModule(module, request.name, options, result, error, codegenBug)) {
    llvm::WithColor::error(llvm::errs(), "fusec") << error << "\n";
    return codegenBug ? ExitInternalError : ExitInputError;
  }
  if (request.emit == "cuda")
    output += source;
  else if (request.emit != "fir")
    output += request.emit == "ptx" ? result.ptx : result.cubin;
  if (!request.launcher.empty()) {
    llvm::StringRef path = request.launcher;
    llvm::SmallString<256> header(path), manifest(llvm::sys::path::parent_path(path));
    llvm::sys::path::replace_extension(header, ".h");
    llvm::sys::path::append(manifest, request.name + ".manifest.json");
    cuda::LauncherFiles files =
        cuda::writeLauncher(plan, llvm::sys::path::filename(header).str(), result.cubin);
    std::vector<std::pair<std::string, std::string>> written = {
        {std::string(header), files.header},
        {request.launcher, files.source},
        {std::string(manifest), cuda::writeManifest(plan, request.arch)}};
    for (const auto &[file, text] : written)
      if (std::string problem = writeFile(file, text); !problem.empty()) {
        llvm::WithColor::error(llvm::errs(), "fusec") << problem << "\n";
        return ExitInputError;
      }
  }
  std::string group = "cuda-" + request.arch;
  for (const auto &kernel : module.kernels)
    for (size_t i = 0; i < kernel->launches.size(); ++i) {
      std::string entry = cuda::getEntryName(*kernel, i);
      const cuda::ResourceUsage &usage = result.usage[entry];
      auto add = [&](const std::string &what, uint64_t value, const std::string &description) {
        stats.push_back({group, entry + "." + what, description, value});
      };
      add("threads", uint64_t(kernel->launches[i].threads), "Threads per block");
      add("registers", uint64_t(usage.registers), "Registers per thread");
      add("spill-stores", uint64_t(usage.spillStoreBytes), "Bytes of spill stores");
      add("spill-loads", uint64_t(usage.spillLoadBytes), "Bytes of spill loads");
      add("stack", uint64_t(usage.stackBytes), "Bytes of stack frame");
      add("shared", uint64_t(usage.sharedBytes), "Bytes of static shared memory");
      // A tiled contraction: its tile and whether tensor cores compute it.
      const Attr *tile = kernel->attrs.get("tile");
      if (tile && tile->kind == Attr::List && tile->list.size() == 3) {
        add("tile-m", uint64_t(tile->list[0].intValue), "Rows of C per block");
        add("tile-n", uint64_t(tile->list[1].intValue), "Columns of C per block");
        add("tile-k", uint64_t(tile->list[2].intValue), "Reduction step staged in shared memory");
        const Attr *stages = kernel->attrs.get("pipeline_stages");
        add("pipeline-stages", stages && stages->kind == Attr::Int ? uint64_t(stages->intValue) : 1,
            "Shared-memory copies of each operand tile (1 to 4, rotating)");
        const Attr *cores = kernel->attrs.get("tensor_cores");
        add("tensor-cores", cores && cores->kind == Attr::Bool && cores->boolValue ? 1 : 0,
            "1 when mma.sync computes the tile");
        uint64_t copied = 0;
        if (const Attr *async = kernel->attrs.get("async_copy"); async && async->kind == Attr::List)
          for (const Attr &operand : async->list)
            copied += operand.kind == Attr::Bool && operand.boolValue;
        add("async-copies", copied, "Operand tiles filled by cp.async (0 to 2)");
      }
    }
  return ExitSuccess;
}
