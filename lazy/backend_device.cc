#include "lazy/backend_device.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace kiln::lazy {

std::string BackendDeviceType::ToString() const { return absl::StrCat("type", type); }

BackendDevice::BackendDevice() : type_(std::make_shared<BackendDeviceType>()) {}

BackendDevice::BackendDevice(std::shared_ptr<const BackendDeviceType> type, int64_t ordinal)
    : type_(type != nullptr ? std::move(type) : std::make_shared<BackendDeviceType>()),
      ordinal_(ordinal) {}

std::string BackendDevice::ToString() const {
  return absl::StrCat(type_->ToString(), ":", ordinal_);
}

int BackendDevice::Compare(const BackendDevice& other) const {
  if (type() != other.type()) return type() < other.type() ? -1 : 1;
  if (ordinal_ != other.ordinal_) return ordinal_ < other.ordinal_ ? -1 : 1;
  return 0;
}

}  // namespace kiln::lazy
