// The C API (kiln_c.h) and its DLPack conversions: zero-copy in and out,
// copies where the memory cannot be viewed, errors as codes + messages, and a
// compiled torch.export JSON program compared with the interpreter.
#include <dlpack/dlpack.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "frontend/pt2/importer.h"
#include "frontend/pt2/program.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "deploy/dlpack_tensor.h"
#include "python/dlpack_device.h"
#include "python/kiln_c.h"
#include "runtime/interpreter.h"
#include "support/tensor.h"

namespace kiln::capi {
namespace {

using ::testing::HasSubstr;

DLTensor Float32View(void* data, std::vector<int64_t>& shape, std::vector<int64_t>* strides) {
  DLTensor t{};
  t.data = data;
  t.device = {kDLCPU, 0};
  t.ndim = static_cast<int>(shape.size());
  t.dtype = {kDLFloat, 32, 1};
  t.shape = shape.data();
  t.strides = strides != nullptr ? strides->data() : nullptr;
  t.byte_offset = 0;
  return t;
}

TEST(DLPackTensorTest, AlignedInputIsReadInPlace) {
  alignas(64) float data[6] = {1, 2, 3, 4, 5, 6};
  std::vector<int64_t> shape = {2, 3};
  DLTensor d = Float32View(data, shape, nullptr);
  bool copied = true;
  absl::StatusOr<Tensor> t = TensorFromDLPack(d, "x", &copied);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_FALSE(copied);
  EXPECT_EQ(t->raw_data(), data);
  EXPECT_EQ(t->sizes(), shape);
  EXPECT_EQ(t->GetDouble(4), 5);
}

TEST(DLPackTensorTest, OffsetAndStridedInputsAreViews) {
  // Heap memory: ASan's fake stack frames do not keep alignas(64).
  std::unique_ptr<float, decltype(&std::free)> owned(
      static_cast<float*>(std::aligned_alloc(64, 16 * sizeof(float))), &std::free);
  float* data = owned.get();
  for (int i = 0; i < 16; ++i) data[i] = static_cast<float>(i);
  // Element 0 at data + 1 (4 bytes past the alignment): a storage offset.
  std::vector<int64_t> shape = {3, 2};
  std::vector<int64_t> strides = {1, 3};  // a transposed 2x3
  DLTensor d = Float32View(data + 1, shape, &strides);
  bool copied = true;
  absl::StatusOr<Tensor> t = TensorFromDLPack(d, "x", &copied);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_FALSE(copied);
  EXPECT_EQ(t->raw_data(), data + 1);
  EXPECT_EQ(t->storage_offset(), 1);  // the storage starts at the 64-byte boundary below
  // Logical order: [1, 4, 2, 5, 3, 6].
  EXPECT_EQ(t->GetDouble(0), 1);
  EXPECT_EQ(t->GetDouble(1), 4);
  EXPECT_EQ(t->GetDouble(5), 6);
}

TEST(DLPackTensorTest, MisalignedAndNegativeStridesAreCopied) {
  alignas(64) char bytes[64];
  float values[3] = {7, 8, 9};
  std::memcpy(bytes + 2, values, sizeof(values));  // not float-aligned
  std::vector<int64_t> shape = {3};
  DLTensor d = Float32View(bytes + 2, shape, nullptr);
  bool copied = false;
  absl::StatusOr<Tensor> t = TensorFromDLPack(d, "x", &copied);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_TRUE(copied);
  EXPECT_EQ(t->GetDouble(0), 7);
  EXPECT_EQ(t->GetDouble(2), 9);

  alignas(64) float data[3] = {1, 2, 3};
  std::vector<int64_t> reversed = {-1};
  DLTensor r = Float32View(data + 2, shape, &reversed);
  t = TensorFromDLPack(r, "x", &copied);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_TRUE(copied);
  EXPECT_EQ(t->GetDouble(0), 3);
  EXPECT_EQ(t->GetDouble(2), 1);
}

TEST(DLPackTensorTest, BadTensorsAreErrors) {
  float data[2] = {0, 0};
  std::vector<int64_t> shape = {2};
  DLTensor d = Float32View(data, shape, nullptr);
  d.dtype = {kDLFloat, 8, 1};
  EXPECT_THAT(std::string(TensorFromDLPack(d, "input 3").status().message()),
              HasSubstr("input 3: unsupported DLPack dtype"));
  d = Float32View(data, shape, nullptr);
  d.device.device_type = kDLCUDA;
  EXPECT_EQ(TensorFromDLPack(d, "x").status().code(), absl::StatusCode::kUnimplemented);
  std::vector<int64_t> negative = {-2};
  d = Float32View(data, negative, nullptr);
  EXPECT_THAT(std::string(TensorFromDLPack(d, "x").status().message()), HasSubstr("negative size"));
  d = Float32View(nullptr, shape, nullptr);
  EXPECT_FALSE(TensorFromDLPack(d, "x").ok());
}

TEST(DLPackTensorTest, OutputsShareStorageUntilDeleted) {
  Tensor t = Tensor::Empty(DType::kFloat32, {2, 2});
  t.data<float>()[3] = 42;
  absl::StatusOr<DLManagedTensor*> m = TensorToDLPack(t);
  ASSERT_TRUE(m.ok()) << m.status();
  const void* data = t.raw_data();
  t = Tensor();  // the managed tensor keeps the storage alive
  EXPECT_EQ((*m)->dl_tensor.data, data);
  EXPECT_EQ(static_cast<const float*>((*m)->dl_tensor.data)[3], 42);
  EXPECT_EQ((*m)->dl_tensor.ndim, 2);
  EXPECT_EQ((*m)->dl_tensor.strides[0], 2);
  EXPECT_EQ((*m)->dl_tensor.dtype.code, kDLFloat);
  (*m)->deleter(*m);
}

// y = gelu(x + w), w a constant given by name.
constexpr char kProgram[] = R"({
 "graph_module": {
  "graph": {
   "inputs": [{"as_tensor": {"name": "p_w"}}, {"as_tensor": {"name": "x"}}],
   "outputs": [{"as_tensor": {"name": "y"}}],
   "nodes": [
    {"target": "torch.ops.aten.add.Tensor", "name": "add",
     "inputs": [{"name": "self", "arg": {"as_tensor": {"name": "x"}}, "kind": 1},
                {"name": "other", "arg": {"as_tensor": {"name": "p_w"}}, "kind": 1}],
     "outputs": [{"as_tensor": {"name": "add"}}]},
    {"target": "torch.ops.aten.gelu.default", "name": "y",
     "inputs": [{"name": "self", "arg": {"as_tensor": {"name": "add"}}, "kind": 1}],
     "outputs": [{"as_tensor": {"name": "y"}}]}],
   "tensor_values": {
    "x": {"dtype": 7, "sizes": [{"as_int": 2}, {"as_int": 3}], "strides": [{"as_int": 3}, {"as_int": 1}]},
    "p_w": {"dtype": 7, "sizes": [{"as_int": 3}], "strides": [{"as_int": 1}]},
    "add": {"dtype": 7, "sizes": [{"as_int": 2}, {"as_int": 3}], "strides": [{"as_int": 3}, {"as_int": 1}]},
    "y": {"dtype": 7, "sizes": [{"as_int": 2}, {"as_int": 3}], "strides": [{"as_int": 3}, {"as_int": 1}]}}},
  "signature": {
   "input_specs": [{"parameter": {"arg": {"name": "p_w"}, "parameter_name": "w"}},
                   {"user_input": {"arg": {"as_tensor": {"name": "x"}}}}],
   "output_specs": [{"user_output": {"arg": {"as_tensor": {"name": "y"}}}}]}},
 "schema_version": {"major": 8, "minor": 17}
})";

// The CPU backend's compile cache in the test's own directory (the home
// directory is read-only in the sandbox).
class CApiTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (const char* tmp = std::getenv("TEST_TMPDIR")) {
      setenv("KILN_CACHE_DIR", (std::string(tmp) + "/kiln_cache").c_str(), 1);
    }
  }
};

// kProgram compiled for the CPU with its constant `w` (kept alive by the
// caller until kilnc_model_free).
kilnc_model* CompileProgram(const DLTensor& w) {
  const char* names[] = {"w"};
  const DLTensor* constants[] = {&w};
  kilnc_model* model = nullptr;
  EXPECT_EQ(kilnc_compile_export_json(kProgram, sizeof(kProgram) - 1, "test", names, constants, 1, nullptr, &model),
            KILNC_OK)
      << kilnc_last_error();
  return model;
}

TEST_F(CApiTest, CompiledExportJsonMatchesTheInterpreter) {
  alignas(64) float w[3] = {0.5f, -1.0f, 2.0f};
  alignas(64) float x[6] = {-2.0f, -0.5f, 0.0f, 0.25f, 1.0f, 3.0f};
  std::vector<int64_t> w_shape = {3}, x_shape = {2, 3};
  DLTensor w_dl = Float32View(w, w_shape, nullptr);
  DLTensor x_dl = Float32View(x, x_shape, nullptr);
  kilnc_model* model = CompileProgram(w_dl);
  ASSERT_NE(model, nullptr);
  EXPECT_STREQ(kilnc_last_error(), "");
  EXPECT_EQ(kilnc_model_num_inputs(model), 1);
  EXPECT_EQ(kilnc_model_num_outputs(model), 1);
  EXPECT_THAT(std::string(kilnc_model_summary(model)), HasSubstr("\"kernels\":"));

  const DLTensor* inputs[] = {&x_dl};
  DLManagedTensor* outputs[1] = {nullptr};
  ASSERT_EQ(kilnc_model_run(model, inputs, 1, outputs, 1), KILNC_OK) << kilnc_last_error();

  // The interpreter on the same program.
  absl::StatusOr<frontend::pt2::ExportedProgram> program = frontend::pt2::ParseExportedProgram(kProgram, "test");
  ASSERT_TRUE(program.ok()) << program.status();
  absl::flat_hash_map<std::string, Tensor> payloads;
  payloads["w"] = *TensorFromDLPack(w_dl, "w");
  absl::StatusOr<frontend::pt2::ImportedProgram> imported = frontend::pt2::ImportProgram(*program, payloads, "test");
  ASSERT_TRUE(imported.ok()) << imported.status();
  runtime::Interpreter interpreter(*imported->graph);
  absl::StatusOr<std::vector<ir::IValue>> expected =
      interpreter.Run({ir::IValue::FromTensor(*TensorFromDLPack(x_dl, "x"))});
  ASSERT_TRUE(expected.ok()) << expected.status();
  const Tensor& e = (*expected)[0].toTensor();
  const DLTensor& got = outputs[0]->dl_tensor;
  ASSERT_EQ(got.ndim, 2);
  EXPECT_EQ(got.shape[0], 2);
  EXPECT_EQ(got.shape[1], 3);
  for (int i = 0; i < 6; ++i) {
    EXPECT_NEAR(static_cast<const float*>(got.data)[i], e.GetDouble(i), 1e-6) << i;
  }
  outputs[0]->deleter(outputs[0]);

  // Wrong counts are errors with messages, not crashes.
  EXPECT_EQ(kilnc_model_run(model, inputs, 0, outputs, 1), KILNC_INVALID_ARGUMENT);
  EXPECT_THAT(std::string(kilnc_last_error()), HasSubstr("takes 1 inputs, got 0"));
  EXPECT_EQ(kilnc_model_run(model, inputs, 1, outputs, 2), KILNC_INVALID_ARGUMENT);
  kilnc_model_free(model);
}

TEST_F(CApiTest, ErrorsAreCodesAndMessages) {
  kilnc_model* model = reinterpret_cast<kilnc_model*>(0x1);
  EXPECT_NE(kilnc_compile_file("/no/such/model.onnx", nullptr, nullptr, 0, &model), KILNC_OK);
  EXPECT_EQ(model, nullptr);
  EXPECT_THAT(std::string(kilnc_last_error()), HasSubstr("/no/such/model.onnx"));
  EXPECT_EQ(kilnc_compile_file("model.txt", nullptr, nullptr, 0, &model), KILNC_INVALID_ARGUMENT);
  EXPECT_EQ(kilnc_compile_export_json("{", 1, "bad", nullptr, nullptr, 0, nullptr, &model), KILNC_INVALID_ARGUMENT);
  EXPECT_THAT(std::string(kilnc_last_error()), HasSubstr("bad"));
  // A constant the program does not have / one it needs and lacks.
  EXPECT_NE(kilnc_compile_export_json(kProgram, sizeof(kProgram) - 1, "test", nullptr, nullptr, 0, nullptr, &model),
            KILNC_OK);
  EXPECT_THAT(std::string(kilnc_last_error()), HasSubstr("w"));
  EXPECT_EQ(kilnc_compile_file(nullptr, nullptr, nullptr, 0, &model), KILNC_INVALID_ARGUMENT);
  EXPECT_EQ(kilnc_compile_file("x.onnx", nullptr, nullptr, 0, nullptr), KILNC_INVALID_ARGUMENT);
  EXPECT_EQ(kilnc_model_run(nullptr, nullptr, 0, nullptr, 0), KILNC_INVALID_ARGUMENT);
  EXPECT_EQ(kilnc_model_num_inputs(nullptr), -1);
  kilnc_model_free(nullptr);
  EXPECT_EQ(kilnc_has_operator("aten::convolution"), 1);
  EXPECT_EQ(kilnc_has_operator("aten::no_such_op"), 0);
  EXPECT_EQ(kilnc_has_operator(nullptr), 0);
  EXPECT_EQ(kilnc_api_version(), KILNC_API_VERSION);
}

// A CPU model refuses device memory and streams with messages that name the
// input, its device and the model's; NULL stream runs as kilnc_model_run.
TEST_F(CApiTest, CpuModelRefusesDeviceTensorsAndStreams) {
  alignas(64) float w[3] = {0.5f, -1.0f, 2.0f};
  alignas(64) float x[6] = {-2.0f, -0.5f, 0.0f, 0.25f, 1.0f, 3.0f};
  std::vector<int64_t> w_shape = {3}, x_shape = {2, 3};
  DLTensor w_dl = Float32View(w, w_shape, nullptr);
  kilnc_model* model = CompileProgram(w_dl);
  ASSERT_NE(model, nullptr);
  DLManagedTensor* outputs[1] = {nullptr};

  DLTensor on_cuda = Float32View(x, x_shape, nullptr);
  on_cuda.device = {kDLCUDA, 0};
  const DLTensor* cuda_inputs[] = {&on_cuda};
  EXPECT_EQ(kilnc_model_run(model, cuda_inputs, 1, outputs, 1), KILNC_INVALID_ARGUMENT);
  EXPECT_THAT(std::string(kilnc_last_error()),
              HasSubstr("input 0 is in cuda:0 memory, but the model was compiled for cpu"));
  EXPECT_EQ(outputs[0], nullptr);
  on_cuda.device = {kDLROCM, 1};
  EXPECT_EQ(kilnc_model_run(model, cuda_inputs, 1, outputs, 1), KILNC_INVALID_ARGUMENT);
  EXPECT_THAT(std::string(kilnc_last_error()), HasSubstr("DLPack device type 10:1"));

  DLTensor host = Float32View(x, x_shape, nullptr);
  const DLTensor* host_inputs[] = {&host};
  int fake_stream = 0;
  EXPECT_EQ(kilnc_model_run_stream(model, &fake_stream, host_inputs, 1, outputs, 1), KILNC_INVALID_ARGUMENT);
  EXPECT_THAT(std::string(kilnc_last_error()), HasSubstr("compiled for cpu (pass NULL)"));
  EXPECT_EQ(outputs[0], nullptr);

  // Pinned host memory is host memory; NULL stream is kilnc_model_run.
  host.device = {kDLCUDAHost, 0};
  ASSERT_EQ(kilnc_model_run_stream(model, nullptr, host_inputs, 1, outputs, 1), KILNC_OK) << kilnc_last_error();
  EXPECT_EQ(outputs[0]->dl_tensor.device.device_type, kDLCPU);
  EXPECT_EQ(outputs[0]->dl_tensor.shape[1], 3);
  outputs[0]->deleter(outputs[0]);
  kilnc_model_free(model);
}

// Without a GPU a CUDA model cannot be compiled: a clear error, no crash.
TEST_F(CApiTest, CudaModelWithoutAGpuIsAnError) {
  kilnc_compile_options options = {"cuda", nullptr, 0};
  kilnc_model* model = nullptr;
  const kilnc_status s = kilnc_compile_file("testdata/onnx_models/small_cnn/model.onnx", &options, nullptr, 0, &model);
  if (s == KILNC_OK) {
    kilnc_model_free(model);
    GTEST_SKIP() << "a CUDA device is present (the GPU check script covers CUDA models)";
  }
  EXPECT_EQ(model, nullptr);
  EXPECT_THAT(std::string(kilnc_last_error()), HasSubstr("cuda"));
  // A device DLPack has no code for here.
  options.device = "no_such_device";
  EXPECT_NE(kilnc_compile_file("testdata/onnx_models/small_cnn/model.onnx", &options, nullptr, 0, &model), KILNC_OK);
  EXPECT_EQ(model, nullptr);
}

TEST(DLPackDeviceTest, DeviceNames) {
  absl::StatusOr<DLDevice> cpu = DLDeviceOf({"cpu", 0});
  ASSERT_TRUE(cpu.ok());
  EXPECT_EQ(cpu->device_type, kDLCPU);
  absl::StatusOr<DLDevice> cuda = DLDeviceOf({"cuda", 1});
  ASSERT_TRUE(cuda.ok());
  EXPECT_EQ(cuda->device_type, kDLCUDA);
  EXPECT_EQ(cuda->device_id, 1);
  absl::StatusOr<DLDevice> sim = DLDeviceOf({"sim", 0});
  EXPECT_EQ(sim.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(sim.status().message()), HasSubstr("'sim'"));
  EXPECT_EQ(DLDeviceName({kDLCUDA, 2}), "cuda:2");
  EXPECT_TRUE(IsHostMemory({kDLCUDAHost, 0}));
  EXPECT_FALSE(IsHostMemory({kDLCUDA, 0}));
}

// Device inputs are described, never dereferenced: a host address stands in
// for device memory here.
TEST(DLPackDeviceTest, CudaInputsAreBorrowedAsDeviceBuffers) {
  alignas(64) float x[12] = {};
  std::vector<int64_t> shape = {3, 2};
  std::vector<int64_t> strides = {1, 3};
  DLTensor d = Float32View(x, shape, &strides);
  d.device = {kDLCUDA, 1};
  d.byte_offset = 8;
  absl::StatusOr<wrapper::DeviceRunInput> in = DeviceInputFromDLPack(d, {kDLCUDA, 1}, "input 0");
  ASSERT_TRUE(in.ok()) << in.status();
  EXPECT_FALSE(in->host.defined());
  EXPECT_EQ(in->device.data, reinterpret_cast<uintptr_t>(x) + 8);
  EXPECT_EQ(in->device.dtype, DType::kFloat32);
  EXPECT_EQ(in->device.sizes, shape);
  EXPECT_EQ(in->device.strides, strides);
  EXPECT_EQ(in->device.device_index, 1);
  EXPECT_EQ(in->device.owner, nullptr);
  // Contiguous strides when DLPack gives none.
  d.strides = nullptr;
  d.byte_offset = 0;
  in = DeviceInputFromDLPack(d, {kDLCUDA, 1}, "input 0");
  ASSERT_TRUE(in.ok()) << in.status();
  EXPECT_EQ(in->device.strides, (std::vector<int64_t>{2, 1}));
  // A host tensor for a CUDA model: read on the host (the program uploads it).
  DLTensor h = Float32View(x, shape, nullptr);
  in = DeviceInputFromDLPack(h, {kDLCUDA, 0}, "input 1");
  ASSERT_TRUE(in.ok()) << in.status();
  ASSERT_TRUE(in->host.defined());
  EXPECT_EQ(in->host.raw_data(), x);
}

TEST(DLPackDeviceTest, BadDeviceInputsAreErrors) {
  alignas(64) float x[8] = {};
  std::vector<int64_t> shape = {2, 2};
  DLTensor d = Float32View(x, shape, nullptr);
  d.device = {kDLCUDA, 1};
  auto message = [](const absl::StatusOr<wrapper::DeviceRunInput>& r) { return std::string(r.status().message()); };
  // Another CUDA device than the model's.
  absl::StatusOr<wrapper::DeviceRunInput> r = DeviceInputFromDLPack(d, {kDLCUDA, 0}, "input 3");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(message(r), HasSubstr("input 3 is in cuda:1 memory, but the model was compiled for cuda:0"));
  // A device kiln does not run on.
  d.device = {kDLVulkan, 0};
  r = DeviceInputFromDLPack(d, {kDLCUDA, 0}, "input 0");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  d.device = {kDLCUDA, 0};
  // Negative strides, no data, misalignment, bad dtype, bad rank.
  std::vector<int64_t> negative = {-2, 1};
  d.strides = negative.data();
  r = DeviceInputFromDLPack(d, {kDLCUDA, 0}, "input 0");
  EXPECT_THAT(message(r), HasSubstr("negative stride"));
  d.strides = nullptr;
  d.data = nullptr;
  r = DeviceInputFromDLPack(d, {kDLCUDA, 0}, "input 0");
  EXPECT_THAT(message(r), HasSubstr("no data"));
  d.data = x;
  d.byte_offset = 2;
  r = DeviceInputFromDLPack(d, {kDLCUDA, 0}, "input 0");
  EXPECT_THAT(message(r), HasSubstr("not aligned"));
  d.byte_offset = 0;
  d.dtype = {kDLFloat, 32, 4};
  r = DeviceInputFromDLPack(d, {kDLCUDA, 0}, "input 0");
  EXPECT_THAT(message(r), HasSubstr("lanes"));
  d.dtype = {kDLFloat, 32, 1};
  d.ndim = -1;
  r = DeviceInputFromDLPack(d, {kDLCUDA, 0}, "input 0");
  EXPECT_THAT(message(r), HasSubstr("rank -1"));
  d.ndim = 2;
  std::vector<int64_t> bad_sizes = {2, -1};
  d.shape = bad_sizes.data();
  r = DeviceInputFromDLPack(d, {kDLCUDA, 0}, "input 0");
  EXPECT_THAT(message(r), HasSubstr("negative size"));
  // A CPU model names the device it cannot read.
  d.shape = shape.data();
  absl::Status s = CheckHostInput(d, "input 2");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("input 2 is in cuda:0 memory"));
}

// Outputs keep kiln's storage alive until the consumer's deleter runs.
TEST(DLPackDeviceTest, OutputDeleterReleasesTheStorage) {
  auto storage = std::make_shared<std::vector<float>>(6, 1.0f);
  std::weak_ptr<std::vector<float>> watch = storage;
  wrapper::DeviceBuffer b;
  b.data = reinterpret_cast<uintptr_t>(storage->data() + 1);
  b.dtype = DType::kFloat16;
  b.sizes = {2, 2};
  b.strides = {1, 2};
  b.device_index = 1;
  b.owner = std::move(storage);
  absl::StatusOr<DLManagedTensor*> m = DeviceBufferToDLPack(b, {kDLCUDA, 0});
  ASSERT_TRUE(m.ok()) << m.status();
  b = wrapper::DeviceBuffer{};
  EXPECT_FALSE(watch.expired());
  const DLTensor& t = (*m)->dl_tensor;
  EXPECT_EQ(t.device.device_type, kDLCUDA);
  EXPECT_EQ(t.device.device_id, 1);
  EXPECT_EQ(t.dtype.code, kDLFloat);
  EXPECT_EQ(t.dtype.bits, 16);
  EXPECT_EQ(t.ndim, 2);
  EXPECT_EQ(t.strides[0], 1);
  EXPECT_EQ(t.strides[1], 2);
  EXPECT_EQ(t.byte_offset, 0u);
  (*m)->deleter(*m);
  EXPECT_TRUE(watch.expired());
  // An output nobody owns is a bug of the program, reported.
  EXPECT_EQ(DeviceBufferToDLPack(wrapper::DeviceBuffer{}, {kDLCUDA, 0}).status().code(),
            absl::StatusCode::kInternal);
}

TEST_F(CApiTest, OnnxModelWithExampleShapes) {
  kilnc_model* model = nullptr;
  std::vector<int64_t> shape = {1, 3, 32, 32};
  DLTensor example = Float32View(nullptr, shape, nullptr);  // shape only
  const DLTensor* examples[] = {&example};
  const kilnc_status s =
      kilnc_compile_file("testdata/onnx_models/small_cnn/model.onnx", nullptr, examples, 1, &model);
  ASSERT_EQ(s, KILNC_OK) << kilnc_last_error();
  std::vector<float> x(3 * 32 * 32, 0.5f);
  DLTensor in = Float32View(x.data(), shape, nullptr);
  const DLTensor* inputs[] = {&in};
  DLManagedTensor* outputs[1] = {nullptr};
  ASSERT_EQ(kilnc_model_run(model, inputs, 1, outputs, 1), KILNC_OK) << kilnc_last_error();
  EXPECT_EQ(outputs[0]->dl_tensor.shape[0], 1);
  outputs[0]->deleter(outputs[0]);
  kilnc_model_free(model);
}

}  // namespace
}  // namespace kiln::capi
