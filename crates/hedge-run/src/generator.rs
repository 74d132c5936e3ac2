//! One lock for the tensor engine's random generator.
//!
//! libtorch keeps one random generator per process. A computation that seeds it and then draws
//! from it (weight initialisation, reparameterisation noise, Monte Carlo match probabilities)
//! is a function of its seed only if no other thread draws in between. hedge-embed,
//! hedge-agnostic and hedge-active all draw from that generator, so the lock lives here, below
//! all of them, and is the same for the whole process. (This crate does not link libtorch: the
//! lock guards the generator without touching it; the crates that seed it do so while holding
//! the guard.)
//!
//! The lock is re-entrant on one thread: a function that holds it may call another that takes
//! it again (an evaluation that embeds its test set, say) without deadlocking.

use std::cell::Cell;
use std::sync::{Mutex, MutexGuard};

static GENERATOR: Mutex<()> = Mutex::new(());

thread_local! {
    /// Whether this thread holds [`GENERATOR`] through an outer guard.
    static HELD: Cell<bool> = const { Cell::new(false) };
}

/// Exclusive use of the process's tensor generator until it drops. Only the outermost guard
/// of a thread owns the lock; inner ones are markers.
#[must_use = "the generator is only held while the guard lives"]
pub struct GeneratorGuard {
    outer: Option<MutexGuard<'static, ()>>,
}

impl Drop for GeneratorGuard {
    fn drop(&mut self) {
        if self.outer.take().is_some() {
            HELD.with(|h| h.set(false));
        }
    }
}

/// Takes the generator for this thread (waits while another thread holds it). A panic while it
/// was held does not poison it: the generator holds no invariant of ours.
pub fn lock_generator() -> GeneratorGuard {
    if HELD.with(Cell::get) {
        return GeneratorGuard { outer: None };
    }
    let guard = GENERATOR.lock().unwrap_or_else(|e| e.into_inner());
    HELD.with(|h| h.set(true));
    GeneratorGuard { outer: Some(guard) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    #[test]
    fn nested_guards_on_one_thread_do_not_deadlock_and_release_at_the_outermost() {
        let outer = lock_generator();
        let inner = lock_generator();
        assert!(inner.outer.is_none() && outer.outer.is_some());
        drop(inner);
        assert!(HELD.with(Cell::get), "an inner guard must not release the outer lock");
        drop(outer);
        assert!(!HELD.with(Cell::get));
        // Another thread can take it now.
        std::thread::spawn(|| drop(lock_generator())).join().unwrap();
    }

    #[test]
    fn two_threads_never_hold_the_generator_at_once() {
        let inside = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let (inside, most) = (inside.clone(), most.clone());
                std::thread::spawn(move || {
                    for _ in 0..200 {
                        let _g = lock_generator();
                        let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        std::thread::yield_now();
                        inside.fetch_sub(1, Ordering::SeqCst);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(most.load(Ordering::SeqCst), 1);
    }
}
