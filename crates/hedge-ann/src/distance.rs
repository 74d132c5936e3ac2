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

/// A distance between two rows of the graph's dimension.
pub(crate) type DistanceFn = fn(&[f32], &[f32]) -> f32;

/// [`squared_l2`] with the length known when compiled, for the usual embedding sizes: the loop
/// unrolls completely (HIB's D = 2 or 3 takes a few instructions instead of a loop's set-up).
fn squared_l2_fixed<const D: usize>(a: &[f32], b: &[f32]) -> f32 {
    let (a, b): (&[f32; D], &[f32; D]) = match (a.try_into(), b.try_into()) {
        (Ok(a), Ok(b)) => (a, b),
        _ => return squared_l2(a, b),
    };
    let mut acc = [0f32; 8];
    for j in 0..D {
        let d = a[j] - b[j];
        acc[j % 8] += d * d;
    }
    ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]))
}

/// The squared Euclidean distance for rows of `dim` values.
pub(crate) fn for_dim(dim: usize) -> DistanceFn {
    match dim {
        1 => squared_l2_fixed::<1>,
        2 => squared_l2_fixed::<2>,
        3 => squared_l2_fixed::<3>,
        4 => squared_l2_fixed::<4>,
        8 => squared_l2_fixed::<8>,
        16 => squared_l2_fixed::<16>,
        32 => squared_l2_fixed::<32>,
        64 => squared_l2_fixed::<64>,
        128 => squared_l2_fixed::<128>,
        _ => squared_l2,
    }
}

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
            assert!((for_dim(len)(&a, &b) - by_hand).abs() <= 1e-5 * by_hand.max(1.0), "len {len}");
        }
    }
}
