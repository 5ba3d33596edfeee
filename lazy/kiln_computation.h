// kiln's BackendData and Computation (internal to the kiln lazy backend).
#ifndef KILN_LAZY_KILN_COMPUTATION_H_
#define KILN_LAZY_KILN_COMPUTATION_H_

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "lazy/backend_data.h"
#include "lazy/computation.h"
#include "ir/ir.h"
#include "support/tensor.h"
#include "driver/compile_graph.h"

namespace kiln::lazy {

class KilnBackendData : public BackendData {
 public:
  // A placeholder (no value).
  KilnBackendData(BackendDevice device, Shape shape);
  KilnBackendData(BackendDevice device, Shape shape, Tensor value);

  Handle GetHandle() override { return handle_; }
  void Assign(const BackendData& data) override;
  bool HasValue() const override { return value_.defined(); }
  const Tensor& value() const { return value_; }

 private:
  static Handle NextHandle();
  Handle handle_;
  Tensor value_;
};

class KilnComputation : public Computation {
 public:
  KilnComputation(std::unique_ptr<ir::Graph> graph, std::string device,
                  std::vector<Shape> parameter_shapes, std::vector<std::string> parameter_names,
                  std::vector<Shape> result_shapes);

  size_t parameters_size() const override { return parameter_shapes_.size(); }
  const std::vector<Shape>& parameter_shapes() const override { return parameter_shapes_; }
  const std::vector<std::string>& parameter_names() const override { return parameter_names_; }
  const std::vector<Shape>& result_shape() const override { return result_shapes_; }
  // The graph IR as lowered (before the passes), printed.
  std::string ToString() const override { return lowered_text_; }

  ir::Graph& graph() { return *graph_; }
  const std::string& device() const { return device_; }
  // Set by Compile.
  driver::CompiledGraph* compiled() { return compiled_.get(); }
  void set_compiled(std::unique_ptr<driver::CompiledGraph> c) { compiled_ = std::move(c); }

 private:
  std::unique_ptr<ir::Graph> graph_;
  std::string device_;
  std::vector<Shape> parameter_shapes_;
  std::vector<std::string> parameter_names_;
  std::vector<Shape> result_shapes_;
  std::string lowered_text_;
  std::unique_ptr<driver::CompiledGraph> compiled_;
};

}  // namespace kiln::lazy

#endif  // KILN_LAZY_KILN_COMPUTATION_H_
