// The calls that hand a tensor between Python and Rust without a copy: the at::Tensor
// inside a Python torch.Tensor and the torch.Tensor around an at::Tensor are the same object,
// autograd graph included. A tch::Tensor holds an `at::Tensor*` allocated with `new`, which is
// what hedge_unpack_tensor returns and hedge_wrap_tensor reads.
#include <torch/csrc/autograd/python_variable.h>

extern "C" {

int hedge_is_tensor(PyObject* obj) { return THPVariable_Check(obj) ? 1 : 0; }

// A new at::Tensor sharing the Python tensor's storage and autograd node (the caller owns it).
void* hedge_unpack_tensor(PyObject* obj) {
  try {
    return new at::Tensor(THPVariable_Unpack(obj));
  } catch (...) {
    return nullptr;
  }
}

// What the input checks read of a tensor, filled by one call: every tch accessor is a call
// across the C++ boundary with its own error check, and a small call's checks made dozens.
struct HedgeTensorMeta {
  int64_t known;  // 0: a layout these fields do not describe (the caller asks libtorch instead)
  int64_t dim;
  int64_t sizes[4];  // the first four sizes
  int64_t numel;
  int64_t scalar_type;  // c10::ScalarType
  int64_t is_cpu;
  int64_t is_contiguous;
  const void* data;  // data_ptr() of a strided CPU tensor with storage, else null
};

// hedge_unpack_tensor, with `meta` filled in the same call.
void* hedge_unpack_tensor_meta(PyObject* obj, HedgeTensorMeta* meta) {
  try {
    const at::Tensor& t = THPVariable_Unpack(obj);
    meta->known = 0;
    if (t.layout() == at::kStrided && !t.is_nested()) {
      meta->dim = t.dim();
      for (int64_t i = 0; i < 4; ++i) meta->sizes[i] = i < meta->dim ? t.size(i) : 0;
      meta->numel = t.numel();
      meta->scalar_type = static_cast<int64_t>(t.scalar_type());
      meta->is_cpu = t.is_cpu() ? 1 : 0;
      meta->is_contiguous = t.is_contiguous() ? 1 : 0;
      meta->data = (t.is_cpu() && t.has_storage() && meta->numel > 0) ? t.data_ptr() : nullptr;
      meta->known = 1;
    }
    return new at::Tensor(t);
  } catch (...) {
    return nullptr;
  }
}

// A new reference to the Python tensor around `tensor` (the same one if Python already has it).
PyObject* hedge_wrap_tensor(void* tensor) {
  try {
    return THPVariable_Wrap(*static_cast<at::Tensor*>(tensor));
  } catch (...) {
    return nullptr;
  }
}

}
