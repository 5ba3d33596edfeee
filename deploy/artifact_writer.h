// Writes a compiled CPU program as a deployment artifact (artifact_files.h):
// the C API library (kiln's prebuilt runtime, libkiln_model.so, found by
// FindDeployRuntime), the program's kernels library, its Wrapper IR without
// constant bytes, the weights file and the header. `kiln compile` calls it.
#ifndef KILN_DEPLOY_ARTIFACT_WRITER_H_
#define KILN_DEPLOY_ARTIFACT_WRITER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "wrapper/wrapper_ir.h"

namespace kiln::deploy {

struct ArtifactFile {
  std::string name;  // relative to the artifact's directory
  std::string contents;
};

struct ArtifactOptions {
  std::string kiln_version;  // recorded in the weights file
  // The model's names of the program's inputs and outputs (the buffer names
  // where empty or of the wrong count).
  std::vector<std::string> input_names;
  std::vector<std::string> output_names;
  std::string runtime_path;  // libkiln_model.so (FindDeployRuntime)
};

// The files, for `program` as the CPU backend compiled it: the source
// GenerateProgramSource made of it and the library built from that source.
absl::StatusOr<std::vector<ArtifactFile>> DeployArtifactFiles(const wrapper::WrapperProgram& program,
                                                              const std::string& generated_source,
                                                              const std::string& kernels_library,
                                                              const ArtifactOptions& options);

// Where kiln's deployment runtime (libkiln_model.so) is: $KILN_DEPLOY_RUNTIME,
// else beside the running executable, else in its Bazel runfiles
// (<exe>.runfiles/kiln/deploy/, $RUNFILES_DIR, $TEST_SRCDIR). NotFound
// naming the places looked at otherwise.
absl::StatusOr<std::string> FindDeployRuntime();

// kiln_model.h's text (embedded at build time).
const char* KilnModelHeaderText();

}  // namespace kiln::deploy

#endif  // KILN_DEPLOY_ARTIFACT_WRITER_H_
