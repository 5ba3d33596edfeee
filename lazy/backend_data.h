// BackendData: a backend's handle to one tensor's worth of device memory
// (PyTorch's torch::lazy::BackendData). Lazy tensors that are materialized
// hold one; device-data nodes of the lazy IR hold one and become parameters
// of computations; ExecuteComputation returns them.
#ifndef KILN_LAZY_BACKEND_DATA_H_
#define KILN_LAZY_BACKEND_DATA_H_

#include <cstdint>
#include <memory>

#include "lazy/backend_device.h"
#include "lazy/shape.h"

namespace kiln::lazy {

class BackendData {
 public:
  // Identifies the underlying buffer: two BackendData with the same handle
  // are the same data (the graph executor's aliasing pattern uses it).
  using Handle = int64_t;

  // Executor-side annotations (PyTorch tags DeviceDataInfo here).
  struct Info {
    virtual ~Info() = default;
  };

  BackendData(BackendDevice device, Shape shape)
      : device_(std::move(device)), shape_(std::move(shape)) {}
  virtual ~BackendData() = default;

  const BackendDevice& device() const { return device_; }
  const Shape& shape() const { return shape_; }
  Info* info() const { return info_.get(); }
  std::shared_ptr<Info> SetInfo(std::shared_ptr<Info> info) {
    std::swap(info_, info);
    return info;
  }

  virtual Handle GetHandle() = 0;
  // Makes this data refer to `data`'s buffer (fills a placeholder).
  virtual void Assign(const BackendData& data) = 0;
  // False for a placeholder not yet assigned.
  virtual bool HasValue() const = 0;

 private:
  BackendDevice device_;
  Shape shape_;
  std::shared_ptr<Info> info_;
};

}  // namespace kiln::lazy

#endif  // KILN_LAZY_BACKEND_DATA_H_
