//! hedge for Python: the CPython extension `hedge._hedge`, which the pure-Python package
//! `hedge` (python/hedge/) wraps with documented, typed functions and classes. Tensors arrive
//! from and return to the user's torch without a copy (`tensor.rs`); arrays arrive as NumPy
//! float64 arrays. Every error a user can cause is a Python `ValueError` or `TypeError` naming
//! the argument; a size over the memory budget is a `MemoryError`, a loop over the work bound a
//! `ValueError`, both with the library's message naming the argument and the value that fits.
//! No call lets a Rust panic out as pyo3's `PanicException` (a `BaseException` that a user's
//! `except Exception` does not catch): every binding's body runs inside `guarded`.

use pyo3::prelude::*;

mod active;
mod agnostic;
mod bayes;
mod bench;
mod hib;
mod hib_run;
mod metrics;
mod shards;
mod tensor;

// The helpers every binding uses, shared with the torch-free extension `hedge._ann` (python/ann/,
// whose library is named after its module).
pub(crate) use _ann::{guarded, value_error};

/// The torch version whose libtorch this module was compiled against.
#[pyfunction]
fn libtorch_version() -> &'static str {
    env!("HEDGE_LIBTORCH_VERSION")
}

#[pymodule]
fn _hedge(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(libtorch_version, m)?)?;
    m.add_function(wrap_pyfunction!(hib::hib_log_match, m)?)?;
    m.add_function(wrap_pyfunction!(hib::hib_match_probability, m)?)?;
    m.add_function(wrap_pyfunction!(hib::hib_match_probability_quadrature, m)?)?;
    m.add_function(wrap_pyfunction!(hib::hib_self_mismatch, m)?)?;
    m.add_function(wrap_pyfunction!(hib::hib_soft_contrastive, m)?)?;
    m.add_function(wrap_pyfunction!(hib::hib_csd, m)?)?;
    m.add_function(wrap_pyfunction!(hib::hib_csd_match_probability, m)?)?;
    m.add_function(wrap_pyfunction!(hib::hib_csd_loss, m)?)?;
    m.add_function(wrap_pyfunction!(hib::hib_closed_form_match_probability, m)?)?;
    m.add_function(wrap_pyfunction!(hib::hib_closed_form_self_mismatch, m)?)?;
    m.add_function(wrap_pyfunction!(hib::hib_closed_forms, m)?)?;
    m.add_function(wrap_pyfunction!(hib::hib_contrastive, m)?)?;
    m.add_function(wrap_pyfunction!(hib::hib_vib_loss, m)?)?;
    m.add_class::<bayes::GpPosterior>()?;
    m.add_class::<bayes::LinearPosterior>()?;
    m.add_class::<bayes::ProbitPosterior>()?;
    m.add_class::<agnostic::LeaceEraser>()?;
    m.add_class::<agnostic::FittedEraser>()?;
    m.add_class::<hib_run::HibRun>()?;
    _ann::register(m)?;
    m.add_class::<shards::GalleryShard>()?;
    m.add_class::<active::PoolShard>()?;
    m.add_class::<active::ShardedFrankWolfe>()?;
    m.add_class::<active::LcmdShard>()?;
    m.add_class::<active::PyPoolPredictive>()?;
    m.add_class::<shards::ShardRules>()?;
    m.add_class::<shards::EmbeddedProbes>()?;
    m.add_function(wrap_pyfunction!(shards::hib_shard_index, m)?)?;
    m.add_function(wrap_pyfunction!(shards::hib_index_template, m)?)?;
    m.add_function(wrap_pyfunction!(shards::hib_write_embedded_shard, m)?)?;
    m.add_function(wrap_pyfunction!(shards::hib_seal_shard_set, m)?)?;
    m.add_function(wrap_pyfunction!(shards::hib_check_shard_set_out, m)?)?;
    m.add_function(wrap_pyfunction!(bayes::gp_fit, m)?)?;
    m.add_function(wrap_pyfunction!(bayes::sparse_gp_fit, m)?)?;
    m.add_function(wrap_pyfunction!(bayes::linear_fit, m)?)?;
    m.add_function(wrap_pyfunction!(bayes::probit_fit, m)?)?;
    m.add_function(wrap_pyfunction!(bayes::gp_condition, m)?)?;
    m.add_function(wrap_pyfunction!(bayes::sparse_gp_condition, m)?)?;
    m.add_function(wrap_pyfunction!(bayes::linear_from_parts, m)?)?;
    m.add_function(wrap_pyfunction!(bayes::probit_from_parts, m)?)?;
    for f in [
        wrap_pyfunction!(active::acs_fw_projections, m)?,
        wrap_pyfunction!(active::acs_fw_gram, m)?,
        wrap_pyfunction!(active::linear_gram, m)?,
        wrap_pyfunction!(active::probit_gram, m)?,
        wrap_pyfunction!(active::linear_projections, m)?,
        wrap_pyfunction!(active::bald_scores, m)?,
        wrap_pyfunction!(active::entropy_scores, m)?,
        wrap_pyfunction!(active::top_b_indices, m)?,
        wrap_pyfunction!(active::lcmd_batch, m)?,
        wrap_pyfunction!(active::pool_loop, m)?,
        wrap_pyfunction!(active::acquisition_kinds, m)?,
        wrap_pyfunction!(active::lcmd_heaviest_cluster, m)?,
        wrap_pyfunction!(active::lcmd_farthest_pick, m)?,
        wrap_pyfunction!(agnostic::leace_fit, m)?,
        wrap_pyfunction!(agnostic::leace_from_parts, m)?,
        wrap_pyfunction!(agnostic::eraser_fit, m)?,
        wrap_pyfunction!(agnostic::eraser_kinds, m)?,
        wrap_pyfunction!(hib_run::hib_train, m)?,
        wrap_pyfunction!(hib_run::hib_resume, m)?,
        wrap_pyfunction!(hib_run::hib_open_run, m)?,
        wrap_pyfunction!(hib_run::hib_build_index, m)?,
        wrap_pyfunction!(hib_run::hib_search, m)?,
        wrap_pyfunction!(bench::bench_match_probability, m)?,
        wrap_pyfunction!(bench::bench_embed, m)?,
        wrap_pyfunction!(bench::bench_soft_contrastive, m)?,
        wrap_pyfunction!(agnostic::probe_one, m)?,
        wrap_pyfunction!(agnostic::probe_linear_and_mlp, m)?,
        wrap_pyfunction!(agnostic::probe_ladder, m)?,
        wrap_pyfunction!(metrics::eval_reliability_diagram, m)?,
        wrap_pyfunction!(metrics::eval_risk_coverage, m)?,
        wrap_pyfunction!(metrics::eval_error_detection, m)?,
    ] {
        m.add_function(f)?;
    }
    Ok(())
}
