// A fast structural hash of a whole graph, used to check a pass's changed
// bit and to detect fixed-point cycles.
//
// Two graphs get the same fingerprint when they would print the same up to
// the numbers of unnamed values: node kinds and order, block structure,
// inputs (by position in a definition-order numbering, so recreating an
// identical node gives the same fingerprint), attributes, types, debug
// names, source locations and scopes. Deterministic across processes.
// Linear time, no recursion (deep block nesting is safe).
#ifndef KILN_PASSES_FINGERPRINT_H_
#define KILN_PASSES_FINGERPRINT_H_

#include <cstdint>
#include <memory>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "ir/ir.h"

namespace kiln::passes {

// Tensor::ValueHash of the tensors already hashed, by storage and view:
// fingerprints taken one after another (a fixed point's iterations) hash
// each weight once instead of every time. Holds the storages, so an address
// is never reused while remembered; valid while no tensor it saw is written
// in place (graph constants are not).
class TensorHashMemo {
 public:
  uint64_t ValueHash(const Tensor& t);
  // Hashes the tensor constants of `graph` not remembered yet, on several
  // threads when they add up to a large model's weights (hashing them one
  // after the other was most of a fixed point's time); the fingerprint that
  // follows finds them remembered. Results are those of ValueHash.
  void HashAhead(const ir::Graph& graph);

 private:
  using Key = std::tuple<const void*, int64_t, int, std::vector<int64_t>, std::vector<int64_t>>;
  static Key KeyOf(const Tensor& t);
  absl::flat_hash_map<Key, uint64_t> hashes_;
  std::vector<std::shared_ptr<Storage>> kept_;
};

uint64_t GraphFingerprint(const ir::Graph& graph);
// The same fingerprint, with tensor contents hashed through `memo`.
uint64_t GraphFingerprint(const ir::Graph& graph, TensorHashMemo& memo);

// Structural hash of a type (what TypeEquals compares).
uint64_t TypeFingerprint(const ir::Type& type);

}  // namespace kiln::passes

#endif  // KILN_PASSES_FINGERPRINT_H_
