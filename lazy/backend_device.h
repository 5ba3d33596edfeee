// BackendDeviceType and BackendDevice (PyTorch's torch::lazy backend device):
// which device of which backend a lazy tensor lives on.
#ifndef KILN_LAZY_BACKEND_DEVICE_H_
#define KILN_LAZY_BACKEND_DEVICE_H_

#include <cstdint>
#include <memory>
#include <string>

namespace kiln::lazy {

// A backend's kind of device. `type` is a backend-defined code (kiln's
// backend: its device registry types, "cpu" = 0, "cuda" = 1); backends
// subclass it to name their types.
class BackendDeviceType {
 public:
  explicit BackendDeviceType(int8_t type = 0) : type(type) {}
  virtual ~BackendDeviceType() = default;
  virtual std::string ToString() const;

  int8_t type;
};

// A device type and an ordinal. Totally ordered (type, then ordinal), so it
// can key maps; copies share the type object.
class BackendDevice {
 public:
  // The default device: type 0, ordinal 0.
  BackendDevice();
  BackendDevice(std::shared_ptr<const BackendDeviceType> type, int64_t ordinal);

  int8_t type() const { return type_->type; }
  const BackendDeviceType& device_type() const { return *type_; }
  int64_t ordinal() const { return ordinal_; }
  // "cpu:0".
  std::string ToString() const;

  // <0, 0, >0 like strcmp: by type code, then ordinal.
  int Compare(const BackendDevice& other) const;
  friend bool operator==(const BackendDevice& a, const BackendDevice& b) {
    return a.Compare(b) == 0;
  }
  friend bool operator!=(const BackendDevice& a, const BackendDevice& b) {
    return a.Compare(b) != 0;
  }
  friend bool operator<(const BackendDevice& a, const BackendDevice& b) {
    return a.Compare(b) < 0;
  }

  template <typename H>
  friend H AbslHashValue(H h, const BackendDevice& d) {
    return H::combine(std::move(h), d.type(), d.ordinal_);
  }

 private:
  std::shared_ptr<const BackendDeviceType> type_;
  int64_t ordinal_ = 0;
};

}  // namespace kiln::lazy

#endif  // KILN_LAZY_BACKEND_DEVICE_H_
