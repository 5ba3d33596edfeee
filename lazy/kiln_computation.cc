#include "lazy/kiln_computation.h"

#include <utility>

#include "ir/text_printer.h"

namespace kiln::lazy {

BackendData::Handle KilnBackendData::NextHandle() {
  static std::atomic<Handle> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

KilnBackendData::KilnBackendData(BackendDevice device, Shape shape)
    : BackendData(std::move(device), std::move(shape)), handle_(NextHandle()) {}

KilnBackendData::KilnBackendData(BackendDevice device, Shape shape, Tensor value)
    : BackendData(std::move(device), std::move(shape)),
      handle_(NextHandle()),
      value_(std::move(value)) {}

void KilnBackendData::Assign(const BackendData& data) {
  if (const auto* other = dynamic_cast<const KilnBackendData*>(&data)) {
    value_ = other->value_;
    handle_ = other->handle_;
  }
}

KilnComputation::KilnComputation(std::unique_ptr<ir::Graph> graph, std::string device,
                                 std::vector<Shape> parameter_shapes,
                                 std::vector<std::string> parameter_names,
                                 std::vector<Shape> result_shapes)
    : graph_(std::move(graph)),
      device_(std::move(device)),
      parameter_shapes_(std::move(parameter_shapes)),
      parameter_names_(std::move(parameter_names)),
      result_shapes_(std::move(result_shapes)),
      lowered_text_(ir::PrintGraph(*graph_)) {}

}  // namespace kiln::lazy
