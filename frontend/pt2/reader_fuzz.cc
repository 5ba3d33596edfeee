// Fuzzes the .pt2 reader end to end: archive, JSON, weights, import. The
// first byte picks what the rest is: odd, a model JSON packaged into an
// archive (with one float32[3] parameter "w"), so that mutations reach the
// importer; even, a whole archive (zip structure, headers, CRCs). Bad input
// must give an error, never a crash; an imported graph must verify.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "frontend/pt2/archive.h"
#include "frontend/pt2/importer.h"
#include "frontend/pt2/test_archive.h"
#include "ir/verifier.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kiln::frontend::pt2;
  if (size == 0) return 0;
  std::string rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] & 1) {
    rest = testing::MakePt2(rest, {{"w", 7, {3}, testing::FloatBytes({1, 2, 3})}});
  }
  absl::StatusOr<std::unique_ptr<Archive>> archive = Archive::FromBytes(std::move(rest), "fuzz.pt2");
  if (!archive.ok()) return 0;
  absl::StatusOr<ImportedProgram> program = ImportPt2Archive(**archive);
  if (!program.ok()) return 0;
  if (!kiln::ir::Verify(*program->graph).ok()) std::abort();
  return 0;
}
