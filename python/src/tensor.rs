//! Tensors handed between Python and Rust without a copy: a Python `torch.Tensor` argument becomes
//! a `tch::Tensor` on the same at::Tensor (storage, device and autograd graph shared), and a
//! result goes back as the `torch.Tensor` around it. The module is imported only after `torch`
//! (hedge/__init__.py), so libtorch_python's symbols are loaded when these calls run.
//!
//! This is the crate's only unsafe code: the calls into src/tensor_glue.cpp, the adoption of
//! the pointer they return, and the in-place read of a CPU tensor's values.
#![allow(unsafe_code)]

use std::ffi::{c_int, c_void};

use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use tch::{Kind, Tensor};

extern "C" {
    fn hedge_is_tensor(obj: *mut pyo3::ffi::PyObject) -> c_int;
    fn hedge_unpack_tensor(obj: *mut pyo3::ffi::PyObject) -> *mut c_void;
    fn hedge_wrap_tensor(tensor: *mut c_void) -> *mut pyo3::ffi::PyObject;
    fn hedge_unpack_tensor_meta(obj: *mut pyo3::ffi::PyObject, meta: *mut RawMeta) -> *mut c_void;
}

/// `HedgeTensorMeta` of tensor_glue.cpp, field for field.
#[repr(C)]
struct RawMeta {
    known: i64,
    dim: i64,
    sizes: [i64; 4],
    numel: i64,
    scalar_type: i64,
    is_cpu: i64,
    is_contiguous: i64,
    data: *const c_void,
}

/// c10::ScalarType::Float, the code libtorch gives float32 (stable across releases: the enum's
/// order is part of its serialisation format).
const SCALAR_TYPE_FLOAT: i64 = 6;

/// A tensor's sizes when it has at most four dimensions (every HIB input has), without a
/// heap allocation.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    sizes: [i64; 4],
    rank: usize,
}

impl Shape {
    fn from_slice(sizes: &[i64]) -> Option<Shape> {
        let mut shape = Shape { sizes: [0; 4], rank: sizes.len() };
        shape.sizes.get_mut(..sizes.len())?.copy_from_slice(sizes);
        Some(shape)
    }

    pub fn as_slice(&self) -> &[i64] {
        &self.sizes[..self.rank]
    }
}

impl std::fmt::Debug for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.as_slice().fmt(f)
    }
}

impl std::ops::Index<usize> for Shape {
    type Output = i64;
    fn index(&self, i: usize) -> &i64 {
        &self.as_slice()[i]
    }
}

/// What the checks of an input read, taken in one call across the C++ boundary.
struct Meta {
    shape: Option<Shape>,
    numel: i64,
    float32: bool,
    cpu: bool,
    contiguous: bool,
    data: *const f32,
}

/// An input tensor with the facts its checks read (rank, sizes, dtype, device, layout), fetched
/// with the tensor in one call: a small call's checks otherwise cost more than the call (each
/// tch accessor crosses into C++ and checks for an error; the checks of `match_probability` at
/// B = 1 made dozens). Tensors the facts do not describe (sparse, nested) are asked through
/// tch instead.
pub struct Input {
    pub tensor: Tensor,
    meta: Option<Meta>,
}

impl Input {
    /// The argument `name` (a torch.Tensor) with its facts.
    pub fn new(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Input> {
        // SAFETY: `obj` is a live Python object (the GIL is held while a Bound exists).
        if unsafe { hedge_is_tensor(obj.as_ptr()) } == 0 {
            return Err(not_a_tensor(obj, name));
        }
        let mut raw = RawMeta {
            known: 0,
            dim: 0,
            sizes: [0; 4],
            numel: 0,
            scalar_type: -1,
            is_cpu: 0,
            is_contiguous: 0,
            data: std::ptr::null(),
        };
        // SAFETY: as in `tensor`; the glue writes `raw` (a live, exclusively borrowed RawMeta of
        // the layout it declares) before returning.
        let ptr = unsafe { hedge_unpack_tensor_meta(obj.as_ptr(), &mut raw) };
        if ptr.is_null() {
            return Err(PyRuntimeError::new_err(format!("could not read the tensor `{name}`")));
        }
        let tensor = unsafe { Tensor::from_ptr(ptr.cast()) };
        let meta = (raw.known == 1).then(|| Meta {
            shape: (0..=4).contains(&raw.dim).then_some(Shape { sizes: raw.sizes, rank: raw.dim.clamp(0, 4) as usize }),
            numel: raw.numel,
            float32: raw.scalar_type == SCALAR_TYPE_FLOAT,
            cpu: raw.is_cpu == 1,
            contiguous: raw.is_contiguous == 1,
            data: raw.data.cast(),
        });
        Ok(Input { tensor, meta })
    }

    /// The optional argument `name` (`None` stays `None`).
    pub fn optional(obj: Option<&Bound<'_, PyAny>>, name: &str) -> PyResult<Option<Input>> {
        match obj {
            Some(o) if !o.is_none() => Input::new(o, name).map(Some),
            _ => Ok(None),
        }
    }

    /// Checks a float32 tensor of rank `ranks` (any of them) and returns its sizes (as
    /// [`check_float`]).
    pub fn check_float(&self, name: &str, ranks: &[usize]) -> PyResult<Shape> {
        match &self.meta {
            Some(Meta { shape: Some(shape), float32: true, .. }) if ranks.contains(&shape.rank) => Ok(*shape),
            // The message, from libtorch's own accessors.
            _ => {
                let sizes = check_float(&self.tensor, name, ranks)?;
                Shape::from_slice(&sizes).ok_or_else(|| {
                    PyValueError::new_err(format!("`{name}` has shape {sizes:?}; at most four dimensions are read"))
                })
            }
        }
    }

    pub fn numel(&self) -> i64 {
        self.meta.as_ref().map_or_else(|| self.tensor.numel() as i64, |m| m.numel)
    }

    /// `f` of the values read in place (no copy, no libtorch call) when the tensor is
    /// contiguous float32 on the CPU; `None` otherwise. The checks of a small call's inputs cost
    /// more than the call itself as libtorch operations (a dispatch each: about 60 µs of checks
    /// against 240 µs of match probability at B = 1), and nothing as a loop over the values.
    pub fn with_cpu_f32<R>(&self, f: impl FnOnce(&[f32]) -> R) -> Option<R> {
        let m = self.meta.as_ref()?;
        if !(m.float32 && m.cpu && m.contiguous) {
            return None;
        }
        if m.data.is_null() || m.numel == 0 {
            return Some(f(&[]));
        }
        // SAFETY: a contiguous float32 CPU tensor holds `numel` consecutive f32 values from its
        // data pointer (storage offset included); `self.tensor` keeps the storage alive for the
        // slice's life and the GIL keeps Python from resizing it meanwhile.
        let values = unsafe { std::slice::from_raw_parts(m.data, m.numel as usize) };
        Some(f(values))
    }

    /// Whether the tensor is on the CPU.
    pub fn on_cpu(&self) -> bool {
        self.meta.as_ref().map_or_else(|| self.tensor.device() == tch::Device::Cpu, |m| m.cpu)
    }

    /// Refuses two inputs on different devices (both on the CPU: no call into libtorch).
    pub fn same_device(&self, other: &Input, name: &str, other_name: &str) -> PyResult<()> {
        if self.on_cpu() && other.on_cpu() {
            return Ok(());
        }
        same_device(&self.tensor, &other.tensor, name, other_name)
    }
}

fn not_a_tensor(obj: &Bound<'_, PyAny>, name: &str) -> PyErr {
    let type_name = obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into());
    PyTypeError::new_err(format!("`{name}` must be a torch.Tensor, not {type_name}"))
}

/// Refuses two tensors on different devices.
pub fn same_device(a: &Tensor, b: &Tensor, a_name: &str, b_name: &str) -> PyResult<()> {
    if a.device() != b.device() {
        return Err(PyValueError::new_err(format!(
            "`{a_name}` is on {:?} and `{b_name}` on {:?}; move them to one device",
            a.device(),
            b.device()
        )));
    }
    Ok(())
}

/// The argument `name` as a tensor sharing the Python tensor's storage and graph.
pub fn tensor(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Tensor> {
    // SAFETY: `obj` is a live Python object (the GIL is held while a Bound exists).
    if unsafe { hedge_is_tensor(obj.as_ptr()) } == 0 {
        return Err(not_a_tensor(obj, name));
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
