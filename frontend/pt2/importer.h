// torch.export programs (.pt2) -> kiln IR.
//
//   ASSIGN_OR_RETURN(ImportedProgram p, LoadPt2File("model.pt2"));
//   RETURN_IF_ERROR(p.signature.CheckInputs(inputs));  // shapes within ranges
//   ... run or compile *p.graph ...
//
// The graph takes the program's user inputs (parameters, buffers and tensor
// constants become constants, read from the archive without a copy where
// it is aligned) and returns its user outputs. Every node becomes kiln ops
// through PyTorch 2.11's schemas (arguments the file leaves out take the
// schema's defaults); in-place ops are functionalized (a write through a
// view scatters back into its base); export-only ops map onto kiln's
// (`_to_copy`, `_softmax`, `slice_scatter`, `scaled_dot_product_attention`,
// ...). Symbolic sizes stay unknown dims in the graph; the signature keeps
// their expressions and ranges.
#ifndef KILN_FRONTEND_PT2_IMPORTER_H_
#define KILN_FRONTEND_PT2_IMPORTER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "frontend/pt2/archive.h"
#include "frontend/pt2/program.h"
#include "frontend/pt2/signature.h"
#include "ir/ir.h"
#include "support/tensor.h"

namespace kiln::frontend::pt2 {

struct Pt2Options {
  // The model inside the archive (models/<name>.json); "" picks "model" or
  // the only one.
  std::string model_name;
  ArchiveOptions archive;
};

struct ImportStats {
  int nodes = 0;            // of the program (subgraphs included)
  int constants = 0;        // parameters, buffers and tensor constants
  int zero_copy_files = 0;  // weight files used in place
  int copied_files = 0;
  uint64_t weight_bytes = 0;
};

struct ImportedProgram {
  std::unique_ptr<ir::Graph> graph;
  Signature signature;
  ImportStats stats;
  std::vector<std::string> verifiers;  // "TRAINING" (training IR), "ATEN" (core ATen)
};

absl::StatusOr<ImportedProgram> LoadPt2File(const std::string& path, const Pt2Options& options = {});
absl::StatusOr<ImportedProgram> ImportPt2Archive(const Archive& archive,
                                                 const Pt2Options& options = {});
// A parsed program whose parameters, buffers and constants are given by
// FQN. `origin` starts error messages.
absl::StatusOr<ImportedProgram> ImportProgram(const ExportedProgram& program,
                                              const absl::flat_hash_map<std::string, Tensor>& payloads,
                                              const std::string& origin);

}  // namespace kiln::frontend::pt2

#endif  // KILN_FRONTEND_PT2_IMPORTER_H_
