#include "deploy/artifact_writer.h"

#include <unistd.h>

#include <cstdlib>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "deploy/artifact_files.h"
#include "deploy/weights_file.h"
#include "support/atomic_file.h"
#include "support/status.h"
#include "wrapper/proto_convert.h"

namespace kiln::deploy {
namespace {

constexpr char kRuntimeName[] = "libkiln_model.so";

bool IsFile(const std::string& path) { return !path.empty() && ::access(path.c_str(), R_OK) == 0; }

std::string SelfExecutable() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return "";
  return std::string(buf, static_cast<size_t>(n));
}

}  // namespace

absl::StatusOr<std::string> FindDeployRuntime() {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("KILN_DEPLOY_RUNTIME"); env != nullptr && *env != '\0') {
    // An explicit choice: no fallback behind it.
    if (IsFile(env)) return std::string(env);
    return absl::NotFoundError(absl::StrCat("KILN_DEPLOY_RUNTIME=", env, " is not a readable file"));
  }
  const std::string exe = SelfExecutable();
  if (!exe.empty()) {
    const std::string dir = exe.substr(0, exe.rfind('/'));
    candidates.push_back(absl::StrCat(dir, "/", kRuntimeName));
    candidates.push_back(absl::StrCat(exe, ".runfiles/kiln/deploy/", kRuntimeName));
  }
  for (const char* var : {"RUNFILES_DIR", "TEST_SRCDIR"}) {
    if (const char* root = std::getenv(var); root != nullptr && *root != '\0') {
      candidates.push_back(absl::StrCat(root, "/kiln/deploy/", kRuntimeName));
    }
  }
  for (const std::string& c : candidates) {
    if (IsFile(c)) return c;
  }
  return absl::NotFoundError(absl::StrCat("kiln's deployment runtime ", kRuntimeName, " is not at ",
                                          absl::StrJoin(candidates, ", "),
                                          " (install it beside kiln or set KILN_DEPLOY_RUNTIME)"));
}

absl::StatusOr<std::vector<ArtifactFile>> DeployArtifactFiles(const wrapper::WrapperProgram& program,
                                                              const std::string& generated_source,
                                                              const std::string& kernels_library,
                                                              const ArtifactOptions& options) {
  if (program.interpreted_graph != nullptr) {
    return absl::UnimplementedError("a program interpreted whole has no compiled library to deploy");
  }
  std::map<std::string, std::string> metadata;
  metadata[kMetaKilnVersion] = options.kiln_version;
  metadata[kMetaSourceHash] = SourceHash(generated_source);
  auto names = [&](const std::vector<std::string>& buffers, const std::vector<std::string>& model_names,
                   const char* prefix) {
    const bool use_model = model_names.size() == buffers.size();
    for (size_t i = 0; i < buffers.size(); ++i) {
      const std::string& name = use_model && !model_names[i].empty() ? model_names[i] : buffers[i];
      metadata[absl::StrCat(prefix, i)] = name;
    }
  };
  names(program.inputs, options.input_names, kMetaInputPrefix);
  names(program.outputs, options.output_names, kMetaOutputPrefix);

  std::vector<ArtifactFile> files;
  ASSIGN_OR_RETURN(std::string weights, SerializeWeights(program.constants, metadata));
  files.push_back({kWeightsFile, std::move(weights)});
  ASSIGN_OR_RETURN(std::string program_bytes, wrapper::SerializeWrapperProgramWithoutConstantData(program));
  files.push_back({kProgramFile, std::move(program_bytes)});
  // Copies (the compile cache may evict its entry; the runtime may be
  // rebuilt): the artifact stands alone.
  ASSIGN_OR_RETURN(std::string kernels, ReadFile(kernels_library));
  files.push_back({kKernelsFile, std::move(kernels)});
  ASSIGN_OR_RETURN(std::string runtime, ReadFile(options.runtime_path));
  files.push_back({kLibraryFile, std::move(runtime)});
  files.push_back({kHeaderFile, KilnModelHeaderText()});
  return files;
}

}  // namespace kiln::deploy
