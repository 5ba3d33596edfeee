// The state behind a LazyTensor handle (internal to lazy). A tensor
// is, at any time, one of: host data not yet uploaded (`host`), device data
// (`data`, with `ir` caching its device-data node once used), or a pending
// computation (`ir` an op node, no data). Pending -> data is the only
// transition after creation (there are no in-place ops), so a pending node
// never changes meaning.
#ifndef KILN_LAZY_LAZY_TENSOR_DATA_H_
#define KILN_LAZY_LAZY_TENSOR_DATA_H_

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "lazy/backend_data.h"
#include "lazy/backend_device.h"
#include "lazy/lazy_ir.h"
#include "lazy/shape.h"
#include "support/tensor.h"

namespace kiln::lazy {

struct DeviceContext;

class LazyTensorData {
 public:
  LazyTensorData(BackendDevice device, Shape shape, absl::Status error = absl::OkStatus());
  ~LazyTensorData();
  LazyTensorData(const LazyTensorData&) = delete;
  LazyTensorData& operator=(const LazyTensorData&) = delete;

  const int64_t id;
  const BackendDevice device;
  const Shape shape;
  const absl::Status error;
  // The device's context, when known at creation (saves a lookup per op).
  DeviceContext* context = nullptr;

  // Before the tensor is shared with anyone (creation): no lock needed.
  void InitPending(NodePtr node, DeviceContext* live) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    ir = std::move(node);
    live_in = live;
  }

  DeviceContext* ReleaseLiveInForDestruction() ABSL_NO_THREAD_SAFETY_ANALYSIS { return live_in; }

  mutable absl::Mutex mu;
  Tensor host ABSL_GUARDED_BY(mu);
  BackendDataPtr data ABSL_GUARDED_BY(mu);
  NodePtr ir ABSL_GUARDED_BY(mu);
  // Set when registered as a live pending tensor of its device context.
  DeviceContext* live_in ABSL_GUARDED_BY(mu) = nullptr;
};

}  // namespace kiln::lazy

#endif  // KILN_LAZY_LAZY_TENSOR_DATA_H_
