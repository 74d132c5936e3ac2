//! Tensors handed between Python and Rust without a copy: a Python `torch.Tensor` argument becomes
//! a `tch::Tensor` on the same at::Tensor (storage, device and autograd graph shared), and a
//! result goes back as the `torch.Tensor` around it. The module is imported only after `torch`
//! (hedge/__init__.py), so libtorch_python's symbols are loaded when these calls run.
//!
//! This is the crate's only unsafe code: two calls into src/tensor_glue.cpp and the adoption of
//! the pointer it returns.
#![allow(unsafe_code)]

use std::ffi::{c_int, c_void};

use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use tch::{Kind, Tensor};

extern "C" {
    fn hedge_is_tensor(obj: *mut pyo3::ffi::PyObject) -> c_int;
    fn hedge_unpack_tensor(obj: *mut pyo3::ffi::PyObject) -> *mut c_void;
    fn hedge_wrap_tensor(tensor: *mut c_void) -> *mut pyo3::ffi::PyObject;
}

/// The argument `name` as a tensor sharing the Python tensor's storage and graph.
pub fn tensor(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Tensor> {
    // SAFETY: `obj` is a live Python object (the GIL is held while a Bound exists).
    if unsafe { hedge_is_tensor(obj.as_ptr()) } == 0 {
        let type_name = obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into());
        return Err(PyTypeError::new_err(format!("`{name}` must be a torch.Tensor, not {type_name}")));
    }
    // SAFETY: `obj` is a torch.Tensor (checked above); the glue returns a heap-allocated
    // at::Tensor (a new reference to the same TensorImpl) or null, and from_ptr takes ownership
    // of exactly that allocation, freeing it when the tch::Tensor drops.
    let raw = unsafe { hedge_unpack_tensor(obj.as_ptr()) };
    if raw.is_null() {
        return Err(PyRuntimeError::new_err(format!("could not read the tensor `{name}`")));
    }
    Ok(unsafe { Tensor::from_ptr(raw.cast()) })
}

/// An optional tensor argument (`None` stays `None`).
pub fn optional_tensor(obj: Option<&Bound<'_, PyAny>>, name: &str) -> PyResult<Option<Tensor>> {
    match obj {
        Some(o) if !o.is_none() => tensor(o, name).map(Some),
        _ => Ok(None),
    }
}

/// The `torch.Tensor` around `t` (no copy; requires_grad and grad_fn carried over).
pub fn to_python(py: Python<'_>, t: &Tensor) -> PyResult<Py<PyAny>> {
    // SAFETY: `t.as_ptr()` is the at::Tensor* a tch::Tensor owns; the glue only reads it and
    // returns a new reference (or null on a C++ exception), which Py takes over.
    let obj = unsafe { hedge_wrap_tensor(t.as_ptr() as *mut c_void) };
    if obj.is_null() {
        return Err(PyRuntimeError::new_err("could not hand a tensor back to Python"));
    }
    Ok(unsafe { Py::from_owned_ptr(py, obj) })
}

/// Checks a float32 tensor of rank `ranks` (any of them) and returns its sizes.
pub fn check_float(t: &Tensor, name: &str, ranks: &[usize]) -> PyResult<Vec<i64>> {
    if t.kind() != Kind::Float {
        return Err(PyValueError::new_err(format!(
            "`{name}` is {:?}; hedge's HIB functions compute in float32 (pass `{name}.float()`)",
            t.kind()
        )));
    }
    let size = t.size();
    if !ranks.contains(&size.len()) {
        return Err(PyValueError::new_err(format!(
            "`{name}` has shape {size:?}; it must have {} dimensions",
            ranks.iter().map(|r| r.to_string()).collect::<Vec<_>>().join(" or ")
        )));
    }
    Ok(size)
}

/// `f` of `t`'s values read in place (no copy, no libtorch call) when `t` is a contiguous float32
/// CPU tensor; `None` otherwise. The checks of a small call's inputs cost more than the call
/// itself as libtorch operations (a dispatch each: about 60 µs of checks against 240 µs of
/// match probability at B = 1), and nothing as a loop over the values.
pub fn with_cpu_f32<R>(t: &Tensor, f: impl FnOnce(&[f32]) -> R) -> Option<R> {
    if t.device() != tch::Device::Cpu || t.kind() != Kind::Float || !t.is_contiguous() {
        return None;
    }
    let n = t.numel();
    if n == 0 {
        return Some(f(&[]));
    }
    // SAFETY: a contiguous float32 CPU tensor holds `numel()` consecutive f32 values from
    // `data_ptr()` (which includes its storage offset). The caller holds the GIL and `t` for the
    // slice's whole life, so no Python code frees or resizes the storage meanwhile.
    let values = unsafe { std::slice::from_raw_parts(t.data_ptr() as *const f32, n) };
    Some(f(values))
}
