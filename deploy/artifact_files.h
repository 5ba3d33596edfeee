// The files of a deployment artifact (kiln compile --device cpu -o DIR) and
// the metadata keys of its weights file: written by artifact_writer.cc, read
// by deployed_model.cc.
#ifndef KILN_DEPLOY_ARTIFACT_FILES_H_
#define KILN_DEPLOY_ARTIFACT_FILES_H_

#include <string>

namespace kiln::deploy {

inline constexpr char kLibraryFile[] = "libmodel.so";        // the C API (kiln_model.h)
inline constexpr char kKernelsFile[] = "model_kernels.so";   // the compiled program
inline constexpr char kProgramFile[] = "model_program.pb";   // Wrapper IR, no constant bytes
inline constexpr char kWeightsFile[] = "model.weights";      // weights_file.h
inline constexpr char kHeaderFile[] = "kiln_model.h";

// Weights metadata: the kiln that wrote the artifact, the XXH3-128 (hex) of
// the program's generated source (the loader regenerates it and compares,
// so a runtime of another kiln is refused instead of misreading the
// kernels), and the model's names of its inputs and outputs
// ("input.0", "output.1", ...).
inline constexpr char kMetaKilnVersion[] = "kiln.version";
inline constexpr char kMetaSourceHash[] = "kiln.source_xxh3_128";
inline constexpr char kMetaInputPrefix[] = "input.";
inline constexpr char kMetaOutputPrefix[] = "output.";

// The hex XXH3-128 of a program's generated source (kMetaSourceHash).
std::string SourceHash(const std::string& source);

}  // namespace kiln::deploy

#endif  // KILN_DEPLOY_ARTIFACT_FILES_H_
