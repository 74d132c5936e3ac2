//! libtorch has one random generator per process. A fit seeds it and draws from it (weights,
//! minibatches, posterior samples); two threads doing that at once would interleave their draws
//! and neither result would depend on its seed alone. Every draw in this crate happens while
//! holding [`lock`], the process-wide [`hedge_run::lock_generator`] that hedge-embed and
//! hedge-agnostic take too, so results stay a function of their seeds under concurrent use
//! (tests run in parallel threads, and so may a user's).

use hedge_run::GeneratorGuard;

/// Exclusive use of libtorch's generator until the guard drops.
pub fn lock() -> GeneratorGuard {
    hedge_run::lock_generator()
}

/// [`lock`], then seed the generator with `seed`.
pub fn seeded(seed: u64) -> GeneratorGuard {
    let guard = lock();
    tch::manual_seed(seed as i64);
    guard
}
