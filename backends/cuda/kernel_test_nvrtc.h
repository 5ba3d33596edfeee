// A tiny NVRTC binding for the kernel codegen tests, through dlopen (the
// backend has its own loader; the tests do not depend on it).
#ifndef KILN_BACKENDS_CUDA_KERNEL_TEST_NVRTC_H_
#define KILN_BACKENDS_CUDA_KERNEL_TEST_NVRTC_H_

#include <dlfcn.h>

#include <cstddef>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace kiln::backends::cuda::testing {

class Nvrtc {
 public:
  static Nvrtc& Get() {
    static Nvrtc* n = new Nvrtc();
    return *n;
  }
  bool ok() const { return ok_; }
  const std::string& why() const { return why_; }

  // Compiles to an sm_90 cubin; "" on success, else the log.
  std::string Compile(const std::string& source, const std::string& name) {
    void* prog = nullptr;
    if (create_(&prog, source.c_str(), (name + ".cu").c_str(), 0, nullptr, nullptr) != 0) return "create failed";
    const char* options[] = {"--gpu-architecture=sm_90", "--std=c++17"};
    const int rc = compile_(prog, 2, options);
    size_t log_size = 0;
    log_size_(prog, &log_size);
    std::string log(log_size, '\0');
    if (log_size > 0) get_log_(prog, &log[0]);
    size_t cubin = 0;
    const bool have_cubin = rc == 0 && cubin_size_(prog, &cubin) == 0 && cubin > 0;
    destroy_(&prog);
    if (rc != 0 || !have_cubin) return absl::StrCat("nvrtc error ", rc, ":\n", log);
    if (absl::StrContains(log, "warning")) warnings_ += log;
    return "";
  }
  const std::string& warnings() const { return warnings_; }

 private:
  Nvrtc() {
    for (const char* lib : {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so", "/usr/local/cuda/lib64/libnvrtc.so"}) {
      handle_ = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
      if (handle_ != nullptr) break;
    }
    if (handle_ == nullptr) {
      why_ = absl::StrCat("NVRTC not found (", dlerror(), ")");
      return;
    }
    create_ = reinterpret_cast<CreateFn>(dlsym(handle_, "nvrtcCreateProgram"));
    compile_ = reinterpret_cast<CompileFn>(dlsym(handle_, "nvrtcCompileProgram"));
    log_size_ = reinterpret_cast<SizeFn>(dlsym(handle_, "nvrtcGetProgramLogSize"));
    get_log_ = reinterpret_cast<GetFn>(dlsym(handle_, "nvrtcGetProgramLog"));
    cubin_size_ = reinterpret_cast<SizeFn>(dlsym(handle_, "nvrtcGetCUBINSize"));
    destroy_ = reinterpret_cast<DestroyFn>(dlsym(handle_, "nvrtcDestroyProgram"));
    ok_ = create_ && compile_ && log_size_ && get_log_ && cubin_size_ && destroy_;
    if (!ok_) why_ = "NVRTC lacks an expected symbol";
  }
  using CreateFn = int (*)(void**, const char*, const char*, int, const char* const*, const char* const*);
  using CompileFn = int (*)(void*, int, const char* const*);
  using SizeFn = int (*)(void*, size_t*);
  using GetFn = int (*)(void*, char*);
  using DestroyFn = int (*)(void**);
  void* handle_ = nullptr;
  bool ok_ = false;
  std::string why_, warnings_;
  CreateFn create_ = nullptr;
  CompileFn compile_ = nullptr;
  SizeFn log_size_ = nullptr;
  GetFn get_log_ = nullptr;
  SizeFn cubin_size_ = nullptr;
  DestroyFn destroy_ = nullptr;
};

}  // namespace kiln::backends::cuda::testing

#endif  // KILN_BACKENDS_CUDA_KERNEL_TEST_NVRTC_H_
