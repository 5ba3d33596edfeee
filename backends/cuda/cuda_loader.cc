#include "backends/cuda/cuda_loader.h"

#include <dlfcn.h>
#include <glob.h>

#include <cstdlib>
#include <initializer_list>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/cuda/cuda_env.h"

namespace kiln::backends::cuda {
namespace {

std::string DlError() {
  const char* e = ::dlerror();
  return e != nullptr ? e : "unknown dlopen error";
}

// Resolves the first of `names` that the library exports into `*fn`.
template <typename Fn>
bool Resolve(void* handle, Fn* fn, std::initializer_list<const char*> names, std::vector<std::string>* missing) {
  for (const char* name : names) {
    if (void* sym = ::dlsym(handle, name)) {
      *fn = reinterpret_cast<Fn>(sym);
      return true;
    }
  }
  missing->push_back(*names.begin());
  return false;
}

absl::Status MissingSymbols(const std::string& library, const std::vector<std::string>& missing) {
  if (missing.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat(library, " lacks ", absl::StrJoin(missing, ", "), " (unsupported CUDA version)"));
}

// Directories searched after the default loader path.
std::vector<std::string> SearchDirs() {
  std::vector<std::string> dirs;
  if (const char* d = std::getenv("KILN_CUDA_LIB_DIR"); d != nullptr && *d != '\0') dirs.push_back(d);
  dirs.push_back("");  // the default search path (LD_LIBRARY_PATH, ldconfig)
  if (const char* d = std::getenv("CUDA_HOME"); d != nullptr && *d != '\0') {
    dirs.push_back(absl::StrCat(d, "/lib64"));
  }
  dirs.push_back("/usr/local/cuda/lib64");
  dirs.push_back("/usr/local/cuda/targets/x86_64-linux/lib");
  return dirs;
}

// dlopens the first `dir/soname` that loads. `preload`: sonames in the same
// directory loaded first (RTLD_GLOBAL), so that the library's own
// dependencies resolve there (cuBLAS needs cuBLASLt, NVRTC its builtins).
void* OpenFirst(std::initializer_list<const char*> sonames, std::initializer_list<const char*> preload,
                std::string* path, std::string* errors) {
  for (const std::string& dir : SearchDirs()) {
    for (const char* soname : sonames) {
      const std::string full = dir.empty() ? soname : absl::StrCat(dir, "/", soname);
      // Best effort: a companion that is missing here may be found later.
      for (const char* pre : preload) {
        const std::string pre_path = dir.empty() ? pre : absl::StrCat(dir, "/", pre);
        ::dlopen(pre_path.c_str(), RTLD_NOW | RTLD_GLOBAL);
      }
      if (void* h = ::dlopen(full.c_str(), RTLD_NOW | RTLD_LOCAL)) {
        *path = full;
        return h;
      }
      absl::StrAppend(errors, errors->empty() ? "" : "; ", DlError());
    }
  }
  return nullptr;
}

void LoadDriver(CudaLibraries& libs) {
  const char* override_path = std::getenv("KILN_CUDA_DRIVER_LIB");
  const char* path = override_path != nullptr && *override_path != '\0' ? override_path : "libcuda.so.1";
  void* h = ::dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    libs.driver_status = absl::UnavailableError(
        absl::StrCat("CUDA driver ", path, " not found (no NVIDIA driver on this machine): ", DlError()));
    return;
  }
  CudaDriverApi& d = libs.driver;
  std::vector<std::string> missing;
  Resolve(h, &d.cuInit, {"cuInit"}, &missing);
  Resolve(h, &d.cuDriverGetVersion, {"cuDriverGetVersion"}, &missing);
  Resolve(h, &d.cuGetErrorName, {"cuGetErrorName"}, &missing);
  Resolve(h, &d.cuGetErrorString, {"cuGetErrorString"}, &missing);
  Resolve(h, &d.cuDeviceGetCount, {"cuDeviceGetCount"}, &missing);
  Resolve(h, &d.cuDeviceGet, {"cuDeviceGet"}, &missing);
  Resolve(h, &d.cuDeviceGetName, {"cuDeviceGetName"}, &missing);
  Resolve(h, &d.cuDeviceGetAttribute, {"cuDeviceGetAttribute"}, &missing);
  Resolve(h, &d.cuDeviceTotalMem, {"cuDeviceTotalMem_v2"}, &missing);
  Resolve(h, &d.cuDevicePrimaryCtxRetain, {"cuDevicePrimaryCtxRetain"}, &missing);
  Resolve(h, &d.cuCtxSetCurrent, {"cuCtxSetCurrent"}, &missing);
  Resolve(h, &d.cuCtxGetCurrent, {"cuCtxGetCurrent"}, &missing);
  Resolve(h, &d.cuCtxSynchronize, {"cuCtxSynchronize"}, &missing);
  Resolve(h, &d.cuMemAlloc, {"cuMemAlloc_v2"}, &missing);
  Resolve(h, &d.cuMemFree, {"cuMemFree_v2"}, &missing);
  Resolve(h, &d.cuMemGetInfo, {"cuMemGetInfo_v2"}, &missing);
  Resolve(h, &d.cuMemcpyHtoDAsync, {"cuMemcpyHtoDAsync_v2"}, &missing);
  Resolve(h, &d.cuMemcpyDtoHAsync, {"cuMemcpyDtoHAsync_v2"}, &missing);
  Resolve(h, &d.cuMemcpyDtoDAsync, {"cuMemcpyDtoDAsync_v2"}, &missing);
  Resolve(h, &d.cuMemsetD32Async, {"cuMemsetD32Async"}, &missing);
  Resolve(h, &d.cuMemsetD16Async, {"cuMemsetD16Async"}, &missing);
  Resolve(h, &d.cuStreamCreate, {"cuStreamCreate"}, &missing);
  Resolve(h, &d.cuStreamDestroy, {"cuStreamDestroy_v2", "cuStreamDestroy"}, &missing);
  Resolve(h, &d.cuStreamSynchronize, {"cuStreamSynchronize"}, &missing);
  Resolve(h, &d.cuStreamQuery, {"cuStreamQuery"}, &missing);
  Resolve(h, &d.cuStreamWaitEvent, {"cuStreamWaitEvent"}, &missing);
  Resolve(h, &d.cuEventCreate, {"cuEventCreate"}, &missing);
  Resolve(h, &d.cuEventDestroy, {"cuEventDestroy_v2", "cuEventDestroy"}, &missing);
  Resolve(h, &d.cuEventRecord, {"cuEventRecord"}, &missing);
  Resolve(h, &d.cuEventQuery, {"cuEventQuery"}, &missing);
  Resolve(h, &d.cuEventSynchronize, {"cuEventSynchronize"}, &missing);
  Resolve(h, &d.cuEventElapsedTime, {"cuEventElapsedTime_v2", "cuEventElapsedTime"}, &missing);
  Resolve(h, &d.cuModuleLoadData, {"cuModuleLoadData"}, &missing);
  Resolve(h, &d.cuModuleUnload, {"cuModuleUnload"}, &missing);
  Resolve(h, &d.cuModuleGetFunction, {"cuModuleGetFunction"}, &missing);
  Resolve(h, &d.cuFuncSetAttribute, {"cuFuncSetAttribute"}, &missing);
  Resolve(h, &d.cuLaunchKernel, {"cuLaunchKernel"}, &missing);
  Resolve(h, &d.cuStreamBeginCapture, {"cuStreamBeginCapture_v2"}, &missing);
  Resolve(h, &d.cuStreamEndCapture, {"cuStreamEndCapture"}, &missing);
  Resolve(h, &d.cuGraphInstantiateWithFlags, {"cuGraphInstantiateWithFlags"}, &missing);
  Resolve(h, &d.cuGraphLaunch, {"cuGraphLaunch"}, &missing);
  Resolve(h, &d.cuGraphExecDestroy, {"cuGraphExecDestroy"}, &missing);
  Resolve(h, &d.cuGraphDestroy, {"cuGraphDestroy"}, &missing);
  Resolve(h, &d.cuGraphGetNodes, {"cuGraphGetNodes"}, &missing);
  libs.driver_status = MissingSymbols(path, missing);
  if (!libs.driver_status.ok()) return;
  const CUresult init = d.cuInit(0);
  if (init != kCudaSuccess) {
    // Not CuCheck: it reads the libraries this function is still loading.
    const char* name = nullptr;
    d.cuGetErrorName(init, &name);
    libs.driver_status = absl::UnavailableError(absl::StrCat("CUDA driver present but cuInit failed: ",
                                                             name != nullptr ? name : "CUDA error", " ", init));
    return;
  }
  d.cuDriverGetVersion(&libs.driver_version);
}

void LoadNvrtc(CudaLibraries& libs) {
  std::string errors;
  void* h = OpenFirst({"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"}, {"libnvrtc-builtins.so.13.0", "libnvrtc-builtins.so.12.9", "libnvrtc-builtins.so"},
                      &libs.nvrtc_path, &errors);
  if (h == nullptr) {
    libs.nvrtc_status = absl::UnavailableError(absl::StrCat("NVRTC not found: ", errors));
    return;
  }
  NvrtcApi& n = libs.nvrtc;
  std::vector<std::string> missing;
  Resolve(h, &n.nvrtcGetErrorString, {"nvrtcGetErrorString"}, &missing);
  Resolve(h, &n.nvrtcVersion, {"nvrtcVersion"}, &missing);
  Resolve(h, &n.nvrtcCreateProgram, {"nvrtcCreateProgram"}, &missing);
  Resolve(h, &n.nvrtcDestroyProgram, {"nvrtcDestroyProgram"}, &missing);
  Resolve(h, &n.nvrtcCompileProgram, {"nvrtcCompileProgram"}, &missing);
  Resolve(h, &n.nvrtcGetProgramLogSize, {"nvrtcGetProgramLogSize"}, &missing);
  Resolve(h, &n.nvrtcGetProgramLog, {"nvrtcGetProgramLog"}, &missing);
  Resolve(h, &n.nvrtcGetCUBINSize, {"nvrtcGetCUBINSize"}, &missing);
  Resolve(h, &n.nvrtcGetCUBIN, {"nvrtcGetCUBIN"}, &missing);
  Resolve(h, &n.nvrtcGetPTXSize, {"nvrtcGetPTXSize"}, &missing);
  Resolve(h, &n.nvrtcGetPTX, {"nvrtcGetPTX"}, &missing);
  libs.nvrtc_status = MissingSymbols(libs.nvrtc_path, missing);
  if (libs.nvrtc_status.ok()) n.nvrtcVersion(&libs.nvrtc_major, &libs.nvrtc_minor);
}

void LoadCublas(CudaLibraries& libs) {
  std::string errors;
  void* h = OpenFirst({"libcublas.so.13", "libcublas.so.12", "libcublas.so"}, {"libcublasLt.so.13", "libcublasLt.so.12"},
                      &libs.cublas_path, &errors);
  if (h == nullptr) {
    libs.cublas_status = absl::UnavailableError(absl::StrCat("cuBLAS not found: ", errors));
    return;
  }
  CublasApi& c = libs.cublas;
  std::vector<std::string> missing;
  Resolve(h, &c.cublasCreate, {"cublasCreate_v2"}, &missing);
  Resolve(h, &c.cublasDestroy, {"cublasDestroy_v2"}, &missing);
  Resolve(h, &c.cublasSetStream, {"cublasSetStream_v2"}, &missing);
  Resolve(h, &c.cublasSetMathMode, {"cublasSetMathMode"}, &missing);
  Resolve(h, &c.cublasSgemm, {"cublasSgemm_v2"}, &missing);
  Resolve(h, &c.cublasSgemmStridedBatched, {"cublasSgemmStridedBatched"}, &missing);
  Resolve(h, &c.cublasGemmEx, {"cublasGemmEx"}, &missing);
  Resolve(h, &c.cublasGemmStridedBatchedEx, {"cublasGemmStridedBatchedEx"}, &missing);
  libs.cublas_status = MissingSymbols(libs.cublas_path, missing);
}

void LoadCublasLt(CudaLibraries& libs) {
  std::string errors;
  void* h = OpenFirst({"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"}, {}, &libs.cublaslt_path, &errors);
  if (h == nullptr) {
    libs.cublaslt_status = absl::UnavailableError(absl::StrCat("cuBLASLt not found: ", errors));
    return;
  }
  CublasLtApi& c = libs.cublaslt;
  std::vector<std::string> missing;
  Resolve(h, &c.cublasLtCreate, {"cublasLtCreate"}, &missing);
  Resolve(h, &c.cublasLtMatmulDescCreate, {"cublasLtMatmulDescCreate"}, &missing);
  Resolve(h, &c.cublasLtMatmulDescDestroy, {"cublasLtMatmulDescDestroy"}, &missing);
  Resolve(h, &c.cublasLtMatmulDescSetAttribute, {"cublasLtMatmulDescSetAttribute"}, &missing);
  Resolve(h, &c.cublasLtMatrixLayoutCreate, {"cublasLtMatrixLayoutCreate"}, &missing);
  Resolve(h, &c.cublasLtMatrixLayoutSetAttribute, {"cublasLtMatrixLayoutSetAttribute"}, &missing);
  Resolve(h, &c.cublasLtMatrixLayoutDestroy, {"cublasLtMatrixLayoutDestroy"}, &missing);
  Resolve(h, &c.cublasLtMatmulPreferenceCreate, {"cublasLtMatmulPreferenceCreate"}, &missing);
  Resolve(h, &c.cublasLtMatmulPreferenceDestroy, {"cublasLtMatmulPreferenceDestroy"}, &missing);
  Resolve(h, &c.cublasLtMatmulPreferenceSetAttribute, {"cublasLtMatmulPreferenceSetAttribute"}, &missing);
  Resolve(h, &c.cublasLtMatmulAlgoGetHeuristic, {"cublasLtMatmulAlgoGetHeuristic"}, &missing);
  Resolve(h, &c.cublasLtMatmul, {"cublasLtMatmul"}, &missing);
  libs.cublaslt_status = MissingSymbols(libs.cublaslt_path, missing);
}

// Where pip's nvidia-cudnn wheels put the library (the GPU machine's
// PyTorch brings cuDNN that way).
std::vector<std::string> CudnnWheelDirs() {
  std::vector<std::string> patterns = {
      "/opt/*/.venv/lib/python3*/site-packages/nvidia/cudnn/lib",
      "/usr/local/lib/python3*/dist-packages/nvidia/cudnn/lib",
      "/usr/local/lib/python3*/site-packages/nvidia/cudnn/lib",
      "/usr/lib/python3*/dist-packages/nvidia/cudnn/lib",
  };
  if (const char* venv = std::getenv("VIRTUAL_ENV"); venv != nullptr && *venv != '\0') {
    patterns.push_back(absl::StrCat(venv, "/lib/python3*/site-packages/nvidia/cudnn/lib"));
  }
  std::vector<std::string> dirs;
  for (const std::string& pattern : patterns) {
    glob_t g;
    if (::glob(pattern.c_str(), 0, nullptr, &g) == 0) {
      for (size_t i = 0; i < g.gl_pathc; ++i) dirs.push_back(g.gl_pathv[i]);
    }
    ::globfree(&g);
  }
  return dirs;
}

void LoadCudnn(CudaLibraries& libs) {
  if (env::CudnnDisabled()) {
    libs.cudnn_status = absl::UnavailableError("cuDNN disabled by KILN_CUDNN=0");
    return;
  }
  std::vector<std::string> dirs;
  if (const char* d = std::getenv("KILN_CUDNN_LIB_DIR"); d != nullptr && *d != '\0') dirs.push_back(d);
  for (const std::string& d : SearchDirs()) dirs.push_back(d);
  for (const std::string& d : CudnnWheelDirs()) dirs.push_back(d);
  std::string errors;
  void* h = nullptr;
  for (const std::string& dir : dirs) {
    const std::string full = dir.empty() ? "libcudnn.so.9" : absl::StrCat(dir, "/libcudnn.so.9");
    // The library finds its sub-libraries (libcudnn_cnn.so.9, ...) beside
    // itself through its $ORIGIN run path.
    h = ::dlopen(full.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h != nullptr) {
      libs.cudnn_path = full;
      break;
    }
    absl::StrAppend(&errors, errors.empty() ? "" : "; ", DlError());
  }
  if (h == nullptr) {
    libs.cudnn_status = absl::UnavailableError(absl::StrCat("cuDNN 9 not found: ", errors));
    return;
  }
  CudnnApi& c = libs.cudnn;
  std::vector<std::string> missing;
  Resolve(h, &c.cudnnGetVersion, {"cudnnGetVersion"}, &missing);
  Resolve(h, &c.cudnnGetErrorString, {"cudnnGetErrorString"}, &missing);
  Resolve(h, &c.cudnnCreate, {"cudnnCreate"}, &missing);
  Resolve(h, &c.cudnnDestroy, {"cudnnDestroy"}, &missing);
  Resolve(h, &c.cudnnSetStream, {"cudnnSetStream"}, &missing);
  Resolve(h, &c.cudnnCreateTensorDescriptor, {"cudnnCreateTensorDescriptor"}, &missing);
  Resolve(h, &c.cudnnSetTensorNdDescriptor, {"cudnnSetTensorNdDescriptor"}, &missing);
  Resolve(h, &c.cudnnDestroyTensorDescriptor, {"cudnnDestroyTensorDescriptor"}, &missing);
  Resolve(h, &c.cudnnCreateFilterDescriptor, {"cudnnCreateFilterDescriptor"}, &missing);
  Resolve(h, &c.cudnnSetFilterNdDescriptor, {"cudnnSetFilterNdDescriptor"}, &missing);
  Resolve(h, &c.cudnnDestroyFilterDescriptor, {"cudnnDestroyFilterDescriptor"}, &missing);
  Resolve(h, &c.cudnnCreateConvolutionDescriptor, {"cudnnCreateConvolutionDescriptor"}, &missing);
  Resolve(h, &c.cudnnSetConvolutionNdDescriptor, {"cudnnSetConvolutionNdDescriptor"}, &missing);
  Resolve(h, &c.cudnnSetConvolutionGroupCount, {"cudnnSetConvolutionGroupCount"}, &missing);
  Resolve(h, &c.cudnnSetConvolutionMathType, {"cudnnSetConvolutionMathType"}, &missing);
  Resolve(h, &c.cudnnDestroyConvolutionDescriptor, {"cudnnDestroyConvolutionDescriptor"}, &missing);
  Resolve(h, &c.cudnnCreateActivationDescriptor, {"cudnnCreateActivationDescriptor"}, &missing);
  Resolve(h, &c.cudnnSetActivationDescriptor, {"cudnnSetActivationDescriptor"}, &missing);
  Resolve(h, &c.cudnnDestroyActivationDescriptor, {"cudnnDestroyActivationDescriptor"}, &missing);
  Resolve(h, &c.cudnnFindConvolutionForwardAlgorithmEx, {"cudnnFindConvolutionForwardAlgorithmEx"}, &missing);
  Resolve(h, &c.cudnnGetConvolutionForwardAlgorithm_v7, {"cudnnGetConvolutionForwardAlgorithm_v7"}, &missing);
  Resolve(h, &c.cudnnGetConvolutionForwardWorkspaceSize, {"cudnnGetConvolutionForwardWorkspaceSize"}, &missing);
  Resolve(h, &c.cudnnConvolutionForward, {"cudnnConvolutionForward"}, &missing);
  Resolve(h, &c.cudnnConvolutionBiasActivationForward, {"cudnnConvolutionBiasActivationForward"}, &missing);
  Resolve(h, &c.cudnnAddTensor, {"cudnnAddTensor"}, &missing);
  Resolve(h, &c.cudnnBackendCreateDescriptor, {"cudnnBackendCreateDescriptor"}, &missing);
  Resolve(h, &c.cudnnBackendDestroyDescriptor, {"cudnnBackendDestroyDescriptor"}, &missing);
  Resolve(h, &c.cudnnBackendFinalize, {"cudnnBackendFinalize"}, &missing);
  Resolve(h, &c.cudnnBackendSetAttribute, {"cudnnBackendSetAttribute"}, &missing);
  Resolve(h, &c.cudnnBackendGetAttribute, {"cudnnBackendGetAttribute"}, &missing);
  Resolve(h, &c.cudnnBackendExecute, {"cudnnBackendExecute"}, &missing);
  libs.cudnn_status = MissingSymbols(libs.cudnn_path, missing);
  if (libs.cudnn_status.ok()) {
    libs.cudnn_version = c.cudnnGetVersion();
    if (libs.cudnn_version < 90000) {
      libs.cudnn_status = absl::FailedPreconditionError(
          absl::StrCat(libs.cudnn_path, " is cuDNN ", libs.cudnn_version, "; kiln needs cuDNN 9"));
    }
  }
}

}  // namespace

const CudaLibraries& LoadCudaLibraries() {
  static const CudaLibraries* libs = [] {
    auto* l = new CudaLibraries();
    // KILN_CUDA_DISABLE=1 makes the device unavailable (tests of that path
    // on a GPU machine).
    if (env::CudaDisabled()) {
      l->driver_status = absl::UnavailableError("CUDA disabled by KILN_CUDA_DISABLE");
    } else {
      LoadDriver(*l);
    }
    LoadNvrtc(*l);
    LoadCublas(*l);
    LoadCublasLt(*l);
    LoadCudnn(*l);
    return l;
  }();
  return *libs;
}

absl::Status CuCheck(CUresult result, const char* what) {
  if (result == kCudaSuccess) return absl::OkStatus();
  const CudaDriverApi& d = LoadCudaLibraries().driver;
  const char* name = nullptr;
  const char* text = nullptr;
  if (d.cuGetErrorName != nullptr) d.cuGetErrorName(result, &name);
  if (d.cuGetErrorString != nullptr) d.cuGetErrorString(result, &text);
  const std::string message = absl::StrCat(what, ": ", name != nullptr ? name : "CUDA error", " ", result,
                                           text != nullptr ? absl::StrCat(" (", text, ")") : "");
  if (result == kCudaErrorOutOfMemory) return absl::ResourceExhaustedError(message);
  return absl::InternalError(message);
}

absl::Status NvrtcCheck(nvrtcResult result, const char* what) {
  if (result == kNvrtcSuccess) return absl::OkStatus();
  const NvrtcApi& n = LoadCudaLibraries().nvrtc;
  const char* text = n.nvrtcGetErrorString != nullptr ? n.nvrtcGetErrorString(result) : nullptr;
  return absl::InternalError(absl::StrCat(what, ": NVRTC error ", result, text != nullptr ? " " : "",
                                          text != nullptr ? text : ""));
}

absl::Status CudnnCheck(cudnnStatus_t status, const char* what) {
  if (status == kCudnnSuccess) return absl::OkStatus();
  const CudnnApi& c = LoadCudaLibraries().cudnn;
  const char* text = c.cudnnGetErrorString != nullptr ? c.cudnnGetErrorString(status) : nullptr;
  return absl::InternalError(absl::StrCat(what, ": cuDNN status ", status, text != nullptr ? " " : "",
                                          text != nullptr ? text : ""));
}

absl::Status CublasCheck(cublasStatus_t status, const char* what) {
  if (status == kCublasSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(what, ": cuBLAS status ", status));
}

}  // namespace kiln::backends::cuda
