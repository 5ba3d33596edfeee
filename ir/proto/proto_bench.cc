// Save/load speed of the proto format, in ns per node.
//   ./bazelw run -c opt //ir/proto:proto_bench -- 100000 1000000
//   ./bazelw run -c opt //ir/proto:proto_bench -- /tmp/s1e6.txt   (IR text file)
// save = SerializeGraph (ToProto + wire encoding); load = DeserializeGraph
// (wire decoding + FromProto). Best of 3.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "ir/proto/proto_convert.h"
#include "ir/proto/sample_graphs.h"
#include "ir/text_parser.h"

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

int Bench(const std::string& label, const kiln::ir::Graph& g) {
  const double nodes = static_cast<double>(g.numNodes());
  double best_save = 1e30, best_load = 1e30;
  size_t bytes_size = 0;
  for (int rep = 0; rep < 3; ++rep) {
    auto t0 = Clock::now();
    auto bytes = kiln::ir::SerializeGraph(g);
    auto t1 = Clock::now();
    if (!bytes.ok()) {
      std::fprintf(stderr, "save failed: %s\n", std::string(bytes.status().message()).c_str());
      return 1;
    }
    auto loaded = kiln::ir::DeserializeGraph(*bytes);
    auto t2 = Clock::now();
    if (!loaded.ok()) {
      std::fprintf(stderr, "load failed: %s\n", std::string(loaded.status().message()).c_str());
      return 1;
    }
    best_save = std::min(best_save, Seconds(t0, t1));
    best_load = std::min(best_load, Seconds(t1, t2));
    bytes_size = bytes->size();
  }
  // Breakdown of the load: wire decoding vs FromProto.
  {
    auto bytes = kiln::ir::SerializeGraph(g);
    double best_parse = 1e30, best_build = 1e30;
    for (int rep = 0; rep < 3; ++rep) {
      google::protobuf::Arena arena;
      auto* proto = google::protobuf::Arena::CreateMessage<kiln::ir::proto::GraphProto>(&arena);
      auto t0 = Clock::now();
      proto->ParseFromString(*bytes);
      auto t1 = Clock::now();
      auto loaded = kiln::ir::FromProto(*proto);
      auto t2 = Clock::now();
      best_parse = std::min(best_parse, Seconds(t0, t1));
      best_build = std::min(best_build, Seconds(t1, t2));
    }
    // Reference: building the same graph in memory with Graph::copy().
    double best_copy = 1e30;
    for (int rep = 0; rep < 3; ++rep) {
      auto t0 = Clock::now();
      auto copy = g.copy();
      best_copy = std::min(best_copy, Seconds(t0, Clock::now()));
    }
    std::printf("  load = parse %.1f + FromProto %.1f ns/node (Graph::copy: %.1f ns/node)\n",
                1e9 * best_parse / nodes, 1e9 * best_build / nodes, 1e9 * best_copy / nodes);
  }
  std::printf("%-28s %9.0f nodes %10zu bytes  save %6.1f ns/node  load %6.1f ns/node  "
              "total %6.1f ns/node\n",
              label.c_str(), nodes, bytes_size, 1e9 * best_save / nodes, 1e9 * best_load / nodes,
              1e9 * (best_save + best_load) / nodes);
  return 0;
}

}  // namespace

// KILN_PROFILE_LOAD=N: only load the chain graph N times (for perf record),
// leaking the graphs so that their destruction stays out of the profile.
int ProfileLoad(size_t nodes, int times) {
  auto g = kiln::ir::testing::MakeChainGraph(nodes);
  auto bytes = kiln::ir::SerializeGraph(*g);
  for (int i = 0; i < times; ++i) {
    auto loaded = kiln::ir::DeserializeGraph(*bytes);
    if (!loaded.ok()) return 1;
    loaded->release();
  }
  return 0;
}

int main(int argc, char** argv) {
  if (const char* times = std::getenv("KILN_PROFILE_LOAD")) {
    return ProfileLoad(argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 100000, std::atoi(times));
  }
  int rc = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    char* end = nullptr;
    const unsigned long long n = std::strtoull(arg.c_str(), &end, 10);
    if (end != arg.c_str() && *end == '\0') {
      auto g = kiln::ir::testing::MakeChainGraph(static_cast<size_t>(n));
      rc |= Bench("api chain " + arg, *g);
      continue;
    }
    std::ifstream in(arg);
    std::stringstream text;
    text << in.rdbuf();
    auto g = kiln::ir::ParseGraph(text.str());
    if (!g.ok()) {
      std::fprintf(stderr, "%s: %s\n", arg.c_str(), std::string(g.status().message()).c_str());
      rc = 1;
      continue;
    }
    rc |= Bench(arg.substr(arg.find_last_of('/') + 1), **g);
  }
  return rc;
}
