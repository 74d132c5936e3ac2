//! Squared Euclidean distance, written so that the compiler keeps eight independent sums in
//! vector registers (one running sum would serialise every addition).

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

/// Rows of any length.
#[derive(Clone, Copy)]
pub(crate) struct AnyLength(pub(crate) usize);

impl RowDistance for AnyLength {
    #[inline(always)]
    fn row(self, values: &[f32], id: usize) -> &[f32] {
        &values[id * self.0..(id + 1) * self.0]
    }

    #[inline(always)]
    fn between(self, a: &[f32], b: &[f32]) -> f32 {
        squared_l2(a, b)
    }
}

/// Evaluates `$body` with `$d` bound to the [`RowDistance`] for rows of `$dim` values: one
/// compiled copy of the body per usual embedding size, one for every other length.
macro_rules! with_distance {
    ($dim:expr, $d:ident => $body:expr) => {
        $crate::distance::with_distance!(@sizes $dim, $d => $body; 1 2 3 4 8 16 32 64 128)
    };
    (@sizes $dim:expr, $d:ident => $body:expr; $($size:literal)*) => {
        match $dim {
            $($size => {
                let $d = $crate::distance::Fixed::<$size>;
                $body
            })*
            other => {
                let $d = $crate::distance::AnyLength(other);
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
        for len in [1usize, 2, 3, 4, 7, 8, 9, 16, 17, 32, 33, 64, 128] {
            let a: Vec<f32> = (0..len).map(|i| i as f32 * 0.5).collect();
            let b: Vec<f32> = (0..len).map(|i| 1.0 - i as f32).collect();
            let by_hand: f32 = a.iter().zip(&b).map(|(x, y)| (x - y) * (x - y)).sum();
            assert!((squared_l2(&a, &b) - by_hand).abs() <= 1e-5 * by_hand.max(1.0), "len {len}");
            let fixed = with_distance!(len, d => d.between(d.row(&a, 0), d.row(&b, 0)));
            assert!((fixed - by_hand).abs() <= 1e-5 * by_hand.max(1.0), "len {len}");
        }
    }
}
