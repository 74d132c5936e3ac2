//! libtorch has one random generator per process. A fit seeds it and draws from it (weights,
//! minibatches, posterior samples); two threads doing that at once would interleave their draws
//! and neither result would depend on its seed alone. Every draw in this crate happens while
//! holding [`lock`], so results stay a function of their seeds under concurrent use (tests run
//! in parallel threads, and so may a user's).

use std::sync::{Mutex, MutexGuard};

static GENERATOR: Mutex<()> = Mutex::new(());

/// Exclusive use of libtorch's generator until the guard drops (a panic elsewhere while it was
/// held does not poison it: the generator holds no invariant of ours).
pub fn lock() -> MutexGuard<'static, ()> {
    GENERATOR.lock().unwrap_or_else(|e| e.into_inner())
}

/// [`lock`], then seed the generator with `seed`.
pub fn seeded(seed: u64) -> MutexGuard<'static, ()> {
    let guard = lock();
    tch::manual_seed(seed as i64);
    guard
}
