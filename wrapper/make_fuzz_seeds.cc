// Regenerates testdata/fuzz_seeds/ (serialized WrapperPrograms):
//   ./bazelw run //wrapper:make_fuzz_seeds -- $PWD/wrapper/testdata/fuzz_seeds
#include <cstdio>
#include <fstream>
#include <string>

#include "wrapper/codegen.h"
#include "wrapper/memory_planning.h"
#include "wrapper/proto_convert.h"
#include "wrapper/test_fixtures.h"

namespace {

bool Write(const std::string& path, const kiln::wrapper::WrapperProgram& program) {
  auto bytes = kiln::wrapper::SerializeWrapperProgram(program);
  if (!bytes.ok()) return false;
  std::ofstream(path, std::ios::binary) << *bytes;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_fuzz_seeds OUT_DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  kiln::wrapper::testing::FakeCodegen codegen;
  auto sample = kiln::wrapper::GenerateWrapper(kiln::wrapper::testing::SampleGraph(),
                                               kiln::wrapper::testing::SampleSchedule(), codegen);
  auto chain = kiln::wrapper::GenerateWrapper(kiln::wrapper::testing::ChainGraph(5),
                                              kiln::wrapper::testing::ChainSchedule(5), codegen);
  if (!sample.ok() || !chain.ok()) return 1;
  bool ok = Write(dir + "/sample.pb", *sample) && Write(dir + "/chain.pb", *chain);
  if (!kiln::wrapper::PlanBufferReuse(*chain).ok()) return 1;
  ok = ok && Write(dir + "/chain_planned.pb", *chain);
  return ok ? 0 : 1;
}
