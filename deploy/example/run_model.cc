// Runs a model compiled by `kiln compile MODEL --device cpu -o DIR` through
// DIR/libmodel.so's C API, with nothing of kiln but kiln_model.h:
//
//   g++ -std=c++17 -I DIR run_model.cc -o run_model -ldl -pthread
//   run_model DIR --input in0.bin [--input in1.bin ...] [--output out0.bin ...]
//             [--threads N --iterations M]
//
// Inputs and outputs are raw little-endian files in the model's order, dtypes
// and shapes (printed first). With --threads N, N threads then run the model
// M times each on the one handle and every result must equal the first
// run's (floats within 1e-5 relative). Exit status: 0 success, 1 a thread's
// result differed, 2 an error (the library's message on stderr).
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "kiln_model.h"

namespace {

// The C API, resolved from the library.
struct Api {
  KilnModelApiVersionFn api_version;
  KilnLastErrorFn last_error;
  KilnModelCreateFn create;
  KilnModelDestroyFn destroy;
  KilnModelCountFn num_inputs, num_outputs;
  KilnModelInfoFn input_info, output_info;
  KilnModelRunFn run;
};

template <typename Fn>
bool Resolve(void* lib, const char* name, Fn* fn) {
  *fn = reinterpret_cast<Fn>(dlsym(lib, name));
  if (*fn == nullptr) std::fprintf(stderr, "run_model: %s has no %s\n", "libmodel.so", name);
  return *fn != nullptr;
}

// A tensor's memory, 64-byte aligned (the library then reads inputs in
// place instead of copying them).
struct Buffer {
  std::vector<int64_t> shape;
  DLDataType dtype{};
  size_t bytes = 0;
  std::unique_ptr<char, decltype(&std::free)> data{nullptr, &std::free};

  explicit Buffer(const KilnTensorInfo& info) : shape(info.shape, info.shape + info.ndim), dtype(info.dtype) {
    bytes = (dtype.bits / 8) * dtype.lanes;
    for (int64_t s : shape) bytes *= static_cast<size_t>(s);
    data.reset(static_cast<char*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64 + 64)));
    std::memset(data.get(), 0, bytes);
  }
  DLTensor Tensor() {
    DLTensor t{};
    t.data = data.get();
    t.device = {kDLCPU, 0};
    t.ndim = static_cast<int>(shape.size());
    t.dtype = dtype;
    t.shape = shape.data();
    t.strides = nullptr;  // compact
    t.byte_offset = 0;
    return t;
  }
};

std::string Describe(const KilnTensorInfo& info) {
  const char* code = info.dtype.code == kDLFloat ? "float" : info.dtype.code == kDLInt ? "int"
                   : info.dtype.code == kDLUInt ? "uint" : info.dtype.code == kDLBfloat ? "bfloat"
                   : info.dtype.code == KILN_DL_BOOL ? "bool" : "other";
  std::string s = std::string(info.name) + ": " + code + std::to_string(info.dtype.bits) + " [";
  for (int d = 0; d < info.ndim; ++d) s += (d ? ", " : "") + std::to_string(info.shape[d]);
  return s + "]";
}

bool Same(const Buffer& a, const Buffer& b) {
  if (a.dtype.code != kDLFloat || a.dtype.bits != 32) return std::memcmp(a.data.get(), b.data.get(), a.bytes) == 0;
  const float* x = reinterpret_cast<const float*>(a.data.get());
  const float* y = reinterpret_cast<const float*>(b.data.get());
  for (size_t i = 0; i < a.bytes / 4; ++i) {
    if (std::isnan(x[i]) != std::isnan(y[i])) return false;
    if (!std::isnan(x[i]) && std::fabs(x[i] - y[i]) > 1e-5f * (1.0f + std::fabs(x[i]))) return false;
  }
  return true;
}

int Error(const Api& api, const char* what) {
  std::fprintf(stderr, "run_model: %s: %s\n", what, api.last_error());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: run_model DIR [--input FILE]... [--output FILE]... [--threads N --iterations M]\n");
    return 2;
  }
  const std::string dir = argv[1];
  std::vector<std::string> input_files, output_files;
  int threads = 1, iterations = 1;
  for (int i = 2; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "run_model: %s needs a value\n", flag.c_str());
      return 2;
    }
    const char* value = argv[++i];
    if (flag == "--input") {
      input_files.push_back(value);
    } else if (flag == "--output") {
      output_files.push_back(value);
    } else if (flag == "--threads") {
      threads = std::atoi(value);
    } else if (flag == "--iterations") {
      iterations = std::atoi(value);
    } else {
      std::fprintf(stderr, "run_model: unknown flag %s\n", flag.c_str());
      return 2;
    }
  }

  const std::string library = dir + "/libmodel.so";
  void* lib = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    std::fprintf(stderr, "run_model: %s\n", dlerror());
    return 2;
  }
  Api api{};
  if (!Resolve(lib, "kiln_model_api_version", &api.api_version) || !Resolve(lib, "kiln_last_error", &api.last_error) ||
      !Resolve(lib, "kiln_model_create", &api.create) || !Resolve(lib, "kiln_model_destroy", &api.destroy) ||
      !Resolve(lib, "kiln_model_num_inputs", &api.num_inputs) ||
      !Resolve(lib, "kiln_model_num_outputs", &api.num_outputs) ||
      !Resolve(lib, "kiln_model_input_info", &api.input_info) ||
      !Resolve(lib, "kiln_model_output_info", &api.output_info) || !Resolve(lib, "kiln_model_run", &api.run)) {
    return 2;
  }
  if (api.api_version() != KILN_MODEL_API_VERSION) {
    std::fprintf(stderr, "run_model: the library has API version %u, this header %d\n", api.api_version(),
                 KILN_MODEL_API_VERSION);
    return 2;
  }

  KilnModel* model = nullptr;
  if (api.create(dir.c_str(), &model) != KILN_OK) return Error(api, "kiln_model_create");
  // Destroyed on every path out (the explicit destroy at the end checks its status).
  std::unique_ptr<KilnModel, KilnModelDestroyFn> owned(model, api.destroy);
  size_t num_inputs = 0, num_outputs = 0;
  api.num_inputs(model, &num_inputs);
  api.num_outputs(model, &num_outputs);
  std::vector<Buffer> inputs, outputs;
  for (size_t i = 0; i < num_inputs; ++i) {
    KilnTensorInfo info;
    if (api.input_info(model, i, &info) != KILN_OK) return Error(api, "kiln_model_input_info");
    std::printf("input %zu %s\n", i, Describe(info).c_str());
    inputs.emplace_back(info);
  }
  for (size_t i = 0; i < num_outputs; ++i) {
    KilnTensorInfo info;
    if (api.output_info(model, i, &info) != KILN_OK) return Error(api, "kiln_model_output_info");
    std::printf("output %zu %s\n", i, Describe(info).c_str());
    outputs.emplace_back(info);
  }
  if (input_files.size() != num_inputs) {
    std::fprintf(stderr, "run_model: the model takes %zu inputs, %zu --input files given\n", num_inputs,
                 input_files.size());
    return 2;
  }
  for (size_t i = 0; i < num_inputs; ++i) {
    std::ifstream in(input_files[i], std::ios::binary | std::ios::ate);
    if (!in || static_cast<size_t>(in.tellg()) != inputs[i].bytes) {
      std::fprintf(stderr, "run_model: %s: expected %zu bytes\n", input_files[i].c_str(), inputs[i].bytes);
      return 2;
    }
    in.seekg(0);
    in.read(inputs[i].data.get(), static_cast<std::streamsize>(inputs[i].bytes));
  }

  std::vector<DLTensor> in_tensors, out_tensors;
  for (Buffer& b : inputs) in_tensors.push_back(b.Tensor());
  for (Buffer& b : outputs) out_tensors.push_back(b.Tensor());
  if (api.run(model, in_tensors.data(), in_tensors.size(), out_tensors.data(), out_tensors.size()) != KILN_OK) {
    return Error(api, "kiln_model_run");
  }
  for (size_t i = 0; i < output_files.size() && i < num_outputs; ++i) {
    std::ofstream out(output_files[i], std::ios::binary);
    out.write(outputs[i].data.get(), static_cast<std::streamsize>(outputs[i].bytes));
    if (!out) {
      std::fprintf(stderr, "run_model: cannot write %s\n", output_files[i].c_str());
      return 2;
    }
  }

  int status = 0;
  if (threads > 1) {
    // Every thread runs the one handle with its own outputs.
    std::vector<int> failures(static_cast<size_t>(threads), 0);
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        std::vector<Buffer> mine;
        std::vector<DLTensor> mine_tensors;
        for (size_t i = 0; i < num_outputs; ++i) {
          KilnTensorInfo info;
          api.output_info(model, i, &info);
          mine.emplace_back(info);
        }
        for (Buffer& b : mine) mine_tensors.push_back(b.Tensor());
        for (int it = 0; it < iterations; ++it) {
          if (api.run(model, in_tensors.data(), in_tensors.size(), mine_tensors.data(), mine_tensors.size()) !=
              KILN_OK) {
            std::fprintf(stderr, "run_model: thread %d: %s\n", t, api.last_error());
            failures[static_cast<size_t>(t)] = 2;
            return;
          }
          for (size_t i = 0; i < num_outputs; ++i) {
            if (!Same(outputs[i], mine[i])) failures[static_cast<size_t>(t)] = 1;
            std::memset(mine[i].data.get(), 0xff, mine[i].bytes);  // the next run must write it all
          }
        }
      });
    }
    for (std::thread& th : pool) th.join();
    for (int f : failures) status = std::max(status, f);
    std::printf("%d threads x %d runs: %s\n", threads, iterations,
                status == 0 ? "every result equals the first run's" : "FAILED");
  }
  if (api.destroy(owned.release()) != KILN_OK) return Error(api, "kiln_model_destroy");
  return status;
}
