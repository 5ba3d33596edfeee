// The whole-model compile cache: a warm compile of a model file skips
// import, passes, lowering and code generation, and rebuilds the program
// from what the first compile left on disk (support/disk_cache.h's protocol:
// private directory, entries published by rename with a checksum sidecar,
// LRU size cap).
//
// Two entries per compile, both keyed by XXH3-128:
//   * model record (CacheDirectory("models")), key = kiln's build (the code
//     of the binary or library running the driver) + the model file's bytes
//     (an ONNX file holds its weights: external data is refused at import):
//     what a caller needs of the model before compiling it (inputs' names
//     and types, outputs' names), so a hit needs no import at all; the
//     content key of a file version (device, inode, size, mtime, ctime) is
//     remembered in CacheDirectory("model_hashes") once that version is two
//     seconds old, so a hit does not hash the model again;
//   * program entry (CacheDirectory("programs")), key = the model key + the
//     pipeline, device and compile options, the debug printer's environment
//     and the call's inputs (dtype and sizes of each, and the values of small
//     integer inputs, which value specialization may compile in): the
//     memory-planned Wrapper IR (wrapper.proto, without constant data), the
//     constants' bytes (mapped read-only on a hit, never copied) and what the
//     compile reported (kernels, externs, islands, what was not compiled).
// A hit hands the Wrapper IR to the device's codegen (DeviceCodegen::
// Compile), whose own caches (the CPU's shared libraries) make that a lookup
// and a load. The program entry format:
//   "KILNPCE1" | u64 header bytes | CachedProgram (program_cache.proto) |
//   zero padding to 64 | each constant's bytes, 64-byte aligned
// The parser is untrusted-input code (program_cache_fuzz): every offset and
// size is checked, the result must pass the Wrapper IR's validation and each
// constant must match its planned layout; a bad entry is a miss (the caller
// recompiles and overwrites it), never a crash.
//
// Not cached (compiled as before): .pt2 models (their signature has no
// serialized form yet), --precision (it also sets device state), devices
// other than the CPU (a CUDA program depends on the GPU's properties, which
// the key does not capture yet), whole-graph interpreted programs, and
// generate_only compiles.
#ifndef KILN_DRIVER_PROGRAM_CACHE_H_
#define KILN_DRIVER_PROGRAM_CACHE_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "driver/compile_graph.h"
#include "driver/model.h"
#include "ir/ivalue.h"

namespace kiln::driver {

// The program entry's first bytes; bumped with the format.
inline constexpr char kProgramEntryMagic[] = "KILNPCE1";
inline constexpr size_t kProgramEntryAlignment = 64;

// A compiled graph (its Wrapper IR with constants, counts, not_compiled) as
// a program entry. FailedPrecondition for what is not cached (a whole-graph
// island).
absl::StatusOr<std::string> SerializeProgramEntry(const CompiledGraph& compiled);

// The same entry as consecutive pieces over the constants' own bytes, for
// DiskCache::Publish without a concatenated copy (a BERT-base entry is
// 435 MB).
struct ProgramEntryPieces {
  std::string head;                     // magic, header size, header, padding
  std::vector<Tensor> constants;        // contiguous; `body` points into them
  std::vector<absl::string_view> body;  // constants and zero padding
  std::vector<absl::string_view> Pieces() const;  // head, then body
};
absl::StatusOr<ProgramEntryPieces> SerializeProgramEntryPieces(const CompiledGraph& compiled);

// Parses a program entry at `bytes` (kProgramEntryAlignment-aligned, kept
// alive by `owner`, which the constants share). The result has the Wrapper
// IR, the counts, not_compiled and the memory report (recomputed from the
// lines); no loop graph, schedule or compiled program. InvalidArgument
// naming `display_name` and what is wrong otherwise.
absl::StatusOr<CompiledGraph> ParseProgramEntry(absl::string_view bytes, std::shared_ptr<const void> owner,
                                                absl::string_view display_name);

// A model record: for ONNX, the model's interface (inputs a caller feeds,
// outputs). Parsing gives an ImportedModel without a graph.
absl::StatusOr<std::string> SerializeModelRecord(const ImportedModel& model);
absl::StatusOr<ImportedModel> ParseModelRecord(absl::string_view bytes, const std::string& path);

// The identity of the kiln build running this code: XXH3-128 of the file
// (executable or shared library) that holds the driver, once per process.
absl::StatusOr<std::string> KilnBuildIdentity();

// Why a compile does not use the cache ("" when it may).
std::string ProgramCacheRefusal(const std::string& path, const ModelCompileOptions& options);

// The keys (see above).
absl::StatusOr<std::string> ModelCacheKey(const std::string& path);
// Unimplemented for an input that is not a tensor.
absl::StatusOr<std::string> ProgramCacheKey(const std::string& model_key, const ModelCompileOptions& options,
                            const std::vector<ir::IValue>* inputs);

// CompileModelFile through the cache: on a hit the model is not imported
// (CompiledModel::model has no graph; its onnx field is the model's
// interface) and the compiled graph has no loop graph or schedule; on a miss
// the usual compile, then both entries are stored. Cache failures (an
// unwritable directory, a corrupt entry) never fail the compile: they are
// noted in `cache.note`.
absl::StatusOr<CompiledModel> CompileModelFileCached(const std::string& path,
                                                     const ModelCompileOptions& options);

}  // namespace kiln::driver

#endif  // KILN_DRIVER_PROGRAM_CACHE_H_
