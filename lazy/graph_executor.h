// The lazy graph executor (PyTorch's LazyGraphExecutor): syncs pending lazy
// tensors by compiling and running their graph, with
//
//  * the compile cache: an LRU map (size --kiln_lazy_compile_cache_size,
//    or SetCompileCacheSize) from the graph key to the compiled
//    computation. The key is the hash of the pending DAG (ops, constant
//    arguments, structure, shapes, dtypes; the roots in order), the device,
//    whether it is a MarkStep, and the aliasing pattern of the parameters
//    (which device-data leaves hold the same data): the same program traced
//    again with the same shapes compiles once;
//  * the per-device data cache: host tensors are uploaded once per distinct
//    value (keyed by content, LRU-bounded);
//  * per-device contexts: the live pending tensors (for MarkStep) and the
//    device lock that serializes syncs of one device;
//  * metrics (GlobalMetrics()): cache hits/misses, compiles, executions,
//    uploads, and their times.
//
// Everything goes through GetBackend(); no backend is named here.
#ifndef KILN_LAZY_GRAPH_EXECUTOR_H_
#define KILN_LAZY_GRAPH_EXECUTOR_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/flags/declare.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "lazy/backend_data.h"
#include "lazy/backend_device.h"
#include "lazy/computation.h"
#include "lazy/lazy_ir.h"
#include "lazy/lazy_tensor_data.h"
#include "lazy/lru_cache.h"
#include "support/tensor.h"

ABSL_DECLARE_FLAG(int64_t, kiln_lazy_compile_cache_size);

namespace kiln::lazy {

// A host tensor's value as a cache key (content hash + value equality).
struct HostValueKey {
  Tensor value;
  uint64_t hash = 0;
  friend bool operator==(const HostValueKey& a, const HostValueKey& b) {
    return a.hash == b.hash && a.value.ValueEquals(b.value);
  }
  template <typename H>
  friend H AbslHashValue(H h, const HostValueKey& k) {
    return H::combine(std::move(h), k.hash);
  }
};

struct DeviceContext {
  explicit DeviceContext(BackendDevice d) : device(std::move(d)), uploads(kUploadCacheEntries) {}
  static constexpr size_t kUploadCacheEntries = 256;

  const BackendDevice device;
  // Held for the whole of a sync of this device.
  absl::Mutex sync_mu;
  absl::Mutex live_mu;
  absl::flat_hash_map<int64_t, std::weak_ptr<LazyTensorData>> live ABSL_GUARDED_BY(live_mu);
  LruCache<HostValueKey, BackendData> uploads;
};

struct CachedComputation {
  ComputationPtr computation;
};

class LazyGraphExecutor {
 public:
  static LazyGraphExecutor& Get();

  DeviceContext* GetDeviceContext(const BackendDevice& device);

  // The tensor's IR node: its pending node, or the device-data node of its
  // data (uploading host data through the data cache first).
  absl::StatusOr<NodePtr> GetIrValue(LazyTensorData& tensor);
  // Makes a just-created tensor pending on `node` and live on its device (for
  // MarkStep). Call before the tensor is shared.
  void InitPendingTensor(const std::shared_ptr<LazyTensorData>& tensor, NodePtr node);
  // Downloads the value, syncing it first when pending.
  absl::StatusOr<Tensor> ToHost(const std::shared_ptr<LazyTensorData>& tensor);

  // Syncs the pending ones among `tensors` (all on one device) in one
  // computation.
  absl::Status SyncTensors(absl::Span<const std::shared_ptr<LazyTensorData>> tensors,
                           bool mark_step = false);
  // Syncs every live pending tensor of `device`, then ends the step.
  absl::Status MarkStep(const BackendDevice& device);
  // The compile-cache key SyncTensors would use now (0 when nothing is
  // pending).
  absl::StatusOr<uint64_t> GetGraphHash(absl::Span<const std::shared_ptr<LazyTensorData>> tensors,
                                        bool mark_step = false);

  // Host data -> device data through the device's data cache.
  absl::StatusOr<BackendDataPtr> UploadCached(const Tensor& host, const BackendDevice& device);
  // A 0-dim value through the data cache.
  absl::StatusOr<BackendDataPtr> UploadScalar(double value, DType dtype,
                                              const BackendDevice& device);

  // The compile cache.
  void SetCompileCacheSize(size_t entries);
  size_t CompileCacheSize() const { return compile_cache_.capacity(); }
  size_t CompileCacheEntries() const { return compile_cache_.size(); }
  // Whether a key (GetGraphHash) has a compiled computation (no LRU refresh).
  bool CompileCacheContains(uint64_t key) const { return compile_cache_.Contains(key); }
  // Empties the compile cache and every data cache (tests).
  void ClearCaches();

 private:
  LazyGraphExecutor();

  struct Collected;
  absl::Status Collect(absl::Span<const std::shared_ptr<LazyTensorData>> tensors, bool mark_step,
                       Collected* out);

  absl::Mutex contexts_mu_;
  std::map<BackendDevice, std::unique_ptr<DeviceContext>> contexts_ ABSL_GUARDED_BY(contexts_mu_);
  LruCache<uint64_t, CachedComputation> compile_cache_;
};

}  // namespace kiln::lazy

#endif  // KILN_LAZY_GRAPH_EXECUTOR_H_
