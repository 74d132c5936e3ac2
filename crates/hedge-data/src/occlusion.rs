//! Random black squares over digits (Appendix A of the HIB paper).
//!
//! Per digit: side `L ~ Unif{0..=28}`, top-left corner `~ Unif{0..=28-L}` in each axis, so the
//! square always lies inside its 28 x 28 digit and covers exactly `L^2` pixels.

use rand::Rng;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::mnist::DIGIT_SIDE;

/// One black square inside a 28 x 28 digit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Occlusion {
    pub side: usize,
    pub top: usize,
    pub left: usize,
}

impl Occlusion {
    /// Draws a square as Appendix A does.
    pub fn sample<R: Rng + ?Sized>(rng: &mut R) -> Self {
        Self::sample_within(rng, DIGIT_SIDE, DIGIT_SIDE)
    }

    /// Appendix A's square for a `height x width` part: side `~ Unif{0..=min(h, w)}`, corner
    /// uniform where the square fits (a 28 x 28 digit draws exactly as [`Occlusion::sample`]).
    pub fn sample_within<R: Rng + ?Sized>(rng: &mut R, height: usize, width: usize) -> Self {
        let side = rng.random_range(0..=height.min(width));
        let top = rng.random_range(0..=height - side);
        let left = rng.random_range(0..=width - side);
        Occlusion { side, top, left }
    }

    /// Blacks out the square in digit `position` of a row-major image `width` pixels wide.
    pub fn apply(&self, image: &mut [f32], width: usize, position: usize) {
        self.apply_at(image, width, position * DIGIT_SIDE);
    }

    /// Blacks out the square in the part starting at column `x_offset` of a row-major image
    /// `width` pixels wide.
    pub fn apply_at(&self, image: &mut [f32], width: usize, x_offset: usize) {
        let x0 = x_offset + self.left;
        for row in self.top..self.top + self.side {
            image[row * width + x0..row * width + x0 + self.side].fill(0.0);
        }
    }
}

/// How the digits of an image are occluded.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Corruption {
    /// No occlusion (the `clean` test twin).
    Clean,
    /// Every digit occluded, deterministically from `seed` and the image index (the `corrupt`
    /// test twin): the same image always gets the same squares, in any order or batch.
    Corrupt { seed: u64 },
    /// Each digit occluded independently with `probability`, freshly drawn each time
    /// (training; the paper uses 0.2).
    Random { probability: f64 },
}

impl Corruption {
    /// The squares for the `digits` digits of image `index`, `None` where a digit is left clean.
    pub fn draw<R: Rng + ?Sized>(&self, index: usize, digits: usize, rng: &mut R) -> Vec<Option<Occlusion>> {
        self.draw_within(index, digits, DIGIT_SIDE, DIGIT_SIDE, rng)
    }

    /// [`Corruption::draw`] for parts of `height x width` pixels (a user's image is one part).
    pub fn draw_within<R: Rng + ?Sized>(
        &self,
        index: usize,
        parts: usize,
        height: usize,
        width: usize,
        rng: &mut R,
    ) -> Vec<Option<Occlusion>> {
        match *self {
            Corruption::Clean => vec![None; parts],
            Corruption::Corrupt { seed } => {
                let mut own = ChaCha8Rng::seed_from_u64(seed);
                own.set_stream(index as u64);
                (0..parts).map(|_| Some(Occlusion::sample_within(&mut own, height, width))).collect()
            }
            Corruption::Random { probability } => (0..parts)
                .map(|_| rng.random_bool(probability).then(|| Occlusion::sample_within(rng, height, width)))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn squares_lie_inside_their_digit_and_cover_side_squared_pixels() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let digits = 3;
        let width = DIGIT_SIDE * digits;
        let mut sides = std::collections::HashSet::new();
        for _ in 0..2000 {
            let occ = Occlusion::sample(&mut rng);
            sides.insert(occ.side);
            let position = rng.random_range(0..digits);
            let mut image = vec![1.0f32; DIGIT_SIDE * width];
            occ.apply(&mut image, width, position);
            let blacked: Vec<usize> = (0..image.len()).filter(|&i| image[i] == 0.0).collect();
            assert_eq!(blacked.len(), occ.side * occ.side);
            for i in blacked {
                let (row, col) = (i / width, i % width);
                assert_eq!(col / DIGIT_SIDE, position, "square leaked out of its digit");
                assert!((occ.top..occ.top + occ.side).contains(&row));
            }
        }
        // Every side length 0..=28 occurs: the full Unif(0, 28) range is used.
        assert_eq!(sides.len(), DIGIT_SIDE + 1);
    }

    #[test]
    fn training_rate_is_the_requested_probability() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let c = Corruption::Random { probability: 0.2 };
        let draws = 50_000;
        let occluded: usize = (0..draws).map(|i| c.draw(i, 2, &mut rng).iter().filter(|o| o.is_some()).count()).sum();
        let rate = occluded as f64 / (2 * draws) as f64;
        // 100k Bernoulli(0.2) draws: std 0.0013, so 0.01 is about 8 sigma.
        assert!((rate - 0.2).abs() < 0.01, "rate {rate}");
    }

    #[test]
    fn corrupt_twin_is_deterministic_per_image_and_always_occluded() {
        let c = Corruption::Corrupt { seed: 3 };
        let mut a = ChaCha8Rng::seed_from_u64(100);
        let mut b = ChaCha8Rng::seed_from_u64(200);
        for i in [0usize, 5, 9999] {
            let x = c.draw(i, 3, &mut a);
            assert_eq!(x, c.draw(i, 3, &mut b));
            assert!(x.iter().all(Option::is_some));
        }
        assert_ne!(c.draw(1, 3, &mut a), c.draw(2, 3, &mut a));
        assert!(Corruption::Clean.draw(0, 2, &mut a).iter().all(Option::is_none));
    }
}
