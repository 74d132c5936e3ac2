// The three calls that hand a tensor between Python and Rust without a copy: the at::Tensor
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

// A new reference to the Python tensor around `tensor` (the same one if Python already has it).
PyObject* hedge_wrap_tensor(void* tensor) {
  try {
    return THPVariable_Wrap(*static_cast<at::Tensor*>(tensor));
  } catch (...) {
    return nullptr;
  }
}

}
