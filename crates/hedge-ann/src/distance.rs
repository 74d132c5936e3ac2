//! Squared Euclidean distance: unrolled at compile time for the usual small embedding sizes,
//! and through the widest vector instructions the processor has (chosen when the program runs,
//! by `pulp`) for every other length.
//!
//! Why not one loop for all: the default x86-64 target compiles to 128-bit SSE2 only, so a
//! portable loop runs at a quarter of what an AVX-512 processor does at 784-D (451 against 219
//! ns a distance for rows out of cache, measured on the development machine). At D ≤ 16 a
//! distance is a few instructions and the call through the runtime dispatch would cost more
//! than it saves, so those lengths keep their compiled-in loops.
use pulp::{Simd, WithSimd};

/// ‖a − b‖²; `a` and `b` have the same length.
#[inline(always)]
pub(crate) fn squared_l2(a: &[f32], b: &[f32]) -> f32 {
    debug_assert_eq!(a.len(), b.len());
    let mut acc = [0f32; 8];
    let (a8, a_rest) = a.split_at(a.len() - a.len() % 8);
    let (b8, b_rest) = b.split_at(a8.len());
    for (x, y) in a8.chunks_exact(8).zip(b8.chunks_exact(8)) {
        for j in 0..8 {
            let d = x[j] - y[j];
            acc[j] += d * d;
        }
    }
    let mut sum = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    for (x, y) in a_rest.iter().zip(b_rest) {
        let d = x - y;
        sum += d * d;
    }
    sum
}

/// [`squared_l2`] with the length known when compiled, for the usual embedding sizes: the loop
/// unrolls completely (HIB's D = 2 or 3 takes a few instructions instead of a loop's set-up).
#[inline(always)]
fn squared_l2_fixed<const D: usize>(a: &[f32; D], b: &[f32; D]) -> f32 {
    let mut acc = [0f32; 8];
    for j in 0..D {
        let d = a[j] - b[j];
        acc[j % 8] += d * d;
    }
    ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]))
}

/// The squared Euclidean distance between rows of one length, and where a row starts.
///
/// The graph's search and build are generic over it, so that for the usual embedding sizes the
/// distance is inlined into the loop that walks a neighbour list (a call through a function
/// pointer per neighbour cost more than the distance itself at D = 2).
pub(crate) trait RowDistance: Copy + Send + Sync {
    /// Row `id` of `values` (`[n * dim]`).
    fn row(self, values: &[f32], id: usize) -> &[f32];
    /// ‖a − b‖² for two rows.
    fn between(self, a: &[f32], b: &[f32]) -> f32;

    /// Starts loading rows `ids` of `values` into the cache, so that the distances computed next
    /// read them from there: the processor fetches them together instead of one row at a time.
    #[inline(always)]
    fn prefetch(self, values: &[f32], ids: &[u32]) {
        // A short row is one cache line: touching its first value loads it (safe Rust has no
        // prefetch instruction of its own).
        let touched = ids.iter().fold(0f32, |acc, &id| acc + self.row(values, id as usize)[0]);
        std::hint::black_box(touched);
    }
}

/// Rows of `D` values, `D` known when compiled.
#[derive(Clone, Copy)]
pub(crate) struct Fixed<const D: usize>;

impl<const D: usize> RowDistance for Fixed<D> {
    #[inline(always)]
    fn row(self, values: &[f32], id: usize) -> &[f32] {
        &values[id * D..id * D + D]
    }

    #[inline(always)]
    fn between(self, a: &[f32], b: &[f32]) -> f32 {
        match (a.try_into(), b.try_into()) {
            (Ok(a), Ok(b)) => squared_l2_fixed::<D>(a, b),
            _ => squared_l2(a, b),
        }
    }
}

/// ‖a − b‖² with the SIMD instructions `S` offers: four independent vector sums (one would
/// wait on each fused multiply-add's latency), the tail through a partial load.
struct VectorSquaredL2<'a>(&'a [f32], &'a [f32]);

impl WithSimd for VectorSquaredL2<'_> {
    type Output = f32;

    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) -> f32 {
        let (a_head, a_tail) = S::as_simd_f32s(self.0);
        let (b_head, b_tail) = S::as_simd_f32s(self.1);
        let zero = simd.splat_f32s(0.0);
        let mut sums = [zero; 4];
        let (a4, b4) = (a_head.chunks_exact(4), b_head.chunks_exact(4));
        let (a_rest, b_rest) = (a4.remainder(), b4.remainder());
        for (x, y) in a4.zip(b4) {
            for j in 0..4 {
                let d = simd.sub_f32s(x[j], y[j]);
                sums[j] = simd.mul_add_f32s(d, d, sums[j]);
            }
        }
        for (j, (x, y)) in a_rest.iter().zip(b_rest).enumerate() {
            let d = simd.sub_f32s(*x, *y);
            sums[j] = simd.mul_add_f32s(d, d, sums[j]);
        }
        if !a_tail.is_empty() {
            // Lanes past the tail load as zero on both sides and add nothing.
            let d = simd.sub_f32s(simd.partial_load_f32s(a_tail), simd.partial_load_f32s(b_tail));
            sums[3] = simd.mul_add_f32s(d, d, sums[3]);
        }
        let total = simd.add_f32s(simd.add_f32s(sums[0], sums[1]), simd.add_f32s(sums[2], sums[3]));
        simd.reduce_sum_f32s(total)
    }
}

/// Rows of any length, their distance through the widest SIMD instructions of this processor.
#[derive(Clone, Copy)]
pub(crate) struct Vectorised {
    len: usize,
    arch: pulp::Arch,
    #[cfg(target_arch = "x86_64")]
    sse: Option<pulp::core_arch::x86::Sse>,
}

impl Vectorised {
    pub(crate) fn new(len: usize) -> Self {
        Vectorised {
            len,
            arch: pulp::Arch::new(),
            #[cfg(target_arch = "x86_64")]
            sse: pulp::core_arch::x86::Sse::try_new(),
        }
    }
}

/// Cache lines of a row prefetched ahead of its distance; the hardware's own prefetcher
/// follows a row once its first lines are read.
const PREFETCH_LINES: usize = 8;

impl RowDistance for Vectorised {
    #[inline(always)]
    fn row(self, values: &[f32], id: usize) -> &[f32] {
        &values[id * self.len..(id + 1) * self.len]
    }

    #[inline(always)]
    fn between(self, a: &[f32], b: &[f32]) -> f32 {
        self.arch.dispatch(VectorSquaredL2(a, b))
    }

    #[inline(always)]
    fn prefetch(self, values: &[f32], ids: &[u32]) {
        #[cfg(target_arch = "x86_64")]
        if let Some(sse) = self.sse {
            for &id in ids {
                let row = self.row(values, id as usize);
                for line in row.chunks(16).take(PREFETCH_LINES) {
                    sse._mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(line.as_ptr().cast());
                }
            }
            return;
        }
        let touched = ids.iter().fold(0f32, |acc, &id| acc + self.row(values, id as usize)[0]);
        std::hint::black_box(touched);
    }
}

/// Evaluates `$body` with `$d` bound to the [`RowDistance`] for rows of `$dim` values: one
/// compiled copy of the body per small embedding size, one vectorised for every other length.
macro_rules! with_distance {
    ($dim:expr, $d:ident => $body:expr) => {
        $crate::distance::with_distance!(@sizes $dim, $d => $body; 1 2 3 4 8 16)
    };
    (@sizes $dim:expr, $d:ident => $body:expr; $($size:literal)*) => {
        match $dim {
            $($size => {
                let $d = $crate::distance::Fixed::<$size>;
                $body
            })*
            other => {
                let $d = $crate::distance::Vectorised::new(other);
                $body
            }
        }
    };
}
pub(crate) use with_distance;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equals_the_sum_of_squares_for_every_length() {
        for len in [1usize, 2, 3, 4, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 128, 129, 784] {
            let a: Vec<f32> = (0..len).map(|i| i as f32 * 0.5).collect();
            let b: Vec<f32> = (0..len).map(|i| 1.0 - i as f32).collect();
            let by_hand: f32 = a.iter().zip(&b).map(|(x, y)| (x - y) * (x - y)).sum();
            assert!((squared_l2(&a, &b) - by_hand).abs() <= 1e-5 * by_hand.max(1.0), "len {len}");
            let fixed = with_distance!(len, d => d.between(d.row(&a, 0), d.row(&b, 0)));
            assert!((fixed - by_hand).abs() <= 1e-5 * by_hand.max(1.0), "len {len}");
            // Every instruction set this processor has, not only the one the dispatch picks
            // (the scalar fallback runs everywhere).
            let mut sets = vec![VectorSquaredL2(&a, &b).with_simd(pulp::Scalar::new())];
            #[cfg(target_arch = "x86_64")]
            {
                sets.extend(pulp::x86::V3::try_new().map(|s| VectorSquaredL2(&a, &b).with_simd(s)));
                sets.extend(pulp::x86::V4::try_new().map(|s| VectorSquaredL2(&a, &b).with_simd(s)));
            }
            for got in sets {
                assert!((got - by_hand).abs() <= 1e-5 * by_hand.max(1.0), "len {len}: {got} against {by_hand}");
            }
        }
    }
}
