//! Digits on backgrounds: BSDS500 photographs, MNIST-M (Ganin et al. 2016: |patch − digit| over
//! a random 28 × 28 crop of a BSDS500 training image, per colour channel) and Context-MNIST, a
//! miniature of the agnostic-networks paper's animals-on-backgrounds data: the target concept is
//! "digit ≥ 5", the protected (context) concept is the background — plain black or an MNIST-M
//! photograph blend — and in the target-labelled training set the background agrees with the
//! target with probability ρ.
//!
//! Images are colour, channel-first `[3, 28, 28]` bytes; a set stores them back to back.

use std::path::{Path, PathBuf};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::datadir::read_bytes;
use crate::mnist::{Mnist, MnistSplit, DIGIT_PIXELS, DIGIT_SIDE};
use crate::{DataError, Result};

/// Bytes of one colour image, `[3, 28, 28]`.
pub const COLOUR_PIXELS: usize = 3 * DIGIT_PIXELS;

/// An RGB photograph, row-major, 3 bytes per pixel.
#[derive(Debug, Clone)]
pub struct Photo {
    pub width: usize,
    pub height: usize,
    pub rgb: Vec<u8>,
}

/// The BSDS500 training photographs (`<dir>/images/train/*.jpg`, in name order).
#[derive(Debug, Clone)]
pub struct Backgrounds {
    pub photos: Vec<Photo>,
}

impl Backgrounds {
    /// Decodes every JPEG of `<dir>/images/train`.
    ///
    /// # Errors
    /// A missing folder, no JPEGs, an undecodable file or one smaller than 28 × 28, each named.
    pub fn load(dir: &Path) -> Result<Self> {
        let folder = dir.join("images/train");
        let entries = std::fs::read_dir(&folder).map_err(|_| DataError::MissingFile {
            path: folder.clone(),
            hint: "put the 200 BSDS500 training JPEGs there (see $HEDGE_DATA_DIR/bsds500/SOURCE.md)".into(),
        })?;
        let mut paths: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x.eq_ignore_ascii_case("jpg")))
            .collect();
        paths.sort();
        if paths.is_empty() {
            return Err(DataError::MissingFile {
                path: folder,
                hint: "no .jpg files; put the BSDS500 training JPEGs there (see bsds500/SOURCE.md)".into(),
            });
        }
        let photos = paths.iter().map(|p| decode_photo(p)).collect::<Result<Vec<_>>>()?;
        Ok(Self { photos })
    }

    /// A random 28 × 28 crop of a random photograph, channel-first `[3, 28, 28]`.
    pub fn random_patch(&self, rng: &mut impl Rng) -> Vec<u8> {
        let photo = &self.photos[rng.random_range(0..self.photos.len())];
        let x0 = rng.random_range(0..=photo.width - DIGIT_SIDE);
        let y0 = rng.random_range(0..=photo.height - DIGIT_SIDE);
        let mut out = vec![0u8; COLOUR_PIXELS];
        for c in 0..3 {
            for y in 0..DIGIT_SIDE {
                for x in 0..DIGIT_SIDE {
                    out[c * DIGIT_PIXELS + y * DIGIT_SIDE + x] = photo.rgb[((y0 + y) * photo.width + x0 + x) * 3 + c];
                }
            }
        }
        out
    }
}

fn decode_photo(path: &Path) -> Result<Photo> {
    decode_photo_bytes(&read_bytes(path)?, path)
}

/// The largest photograph decoded, in pixels: BSDS500's are 481 x 321; a header may claim
/// 65,535 x 65,535, which would be a 12 GB allocation.
pub const MAX_PHOTO_PIXELS: usize = 50_000_000;

/// [`decode_photo`] on bytes already read (`path` names them in errors; the fuzz targets' entry).
pub(crate) fn decode_photo_bytes(bytes: &[u8], path: &Path) -> Result<Photo> {
    let mut decoder = jpeg_decoder::Decoder::new(bytes);
    decoder.read_info().map_err(|e| DataError::format(path, "JPEG", e.to_string()))?;
    let claimed = decoder.info().ok_or_else(|| DataError::format(path, "JPEG", "no image header"))?;
    let claimed_pixels = usize::from(claimed.width) * usize::from(claimed.height);
    if claimed_pixels > MAX_PHOTO_PIXELS {
        return Err(DataError::format(
            path,
            "JPEG",
            format!(
                "{} x {} pixels is over hedge's limit of {MAX_PHOTO_PIXELS} pixels for a background photograph; \
                 downscale it first",
                claimed.width, claimed.height
            ),
        ));
    }
    decoder.set_max_decoding_buffer_size(MAX_PHOTO_PIXELS * 4);
    let pixels = decoder.decode().map_err(|e| DataError::format(path, "JPEG", e.to_string()))?;
    let info = decoder.info().ok_or_else(|| DataError::format(path, "JPEG", "no image header"))?;
    let (width, height) = (usize::from(info.width), usize::from(info.height));
    let rgb = match info.pixel_format {
        jpeg_decoder::PixelFormat::RGB24 => pixels,
        jpeg_decoder::PixelFormat::L8 => pixels.iter().flat_map(|&v| [v, v, v]).collect(),
        other => {
            return Err(DataError::format(path, "JPEG", format!("pixel format {other:?}; expected RGB or greyscale")))
        }
    };
    if width < DIGIT_SIDE || height < DIGIT_SIDE || rgb.len() != width * height * 3 {
        return Err(DataError::format(path, "JPEG", format!("{width} x {height} is smaller than a 28 x 28 patch")));
    }
    Ok(Photo { width, height, rgb })
}

/// A white digit on black, the same in all three channels.
pub fn plain(digit: &[u8]) -> Vec<u8> {
    digit.iter().copied().cycle().take(COLOUR_PIXELS).collect()
}

/// MNIST-M blend: |patch − digit| per channel.
pub fn blend(digit: &[u8], patch: &[u8]) -> Vec<u8> {
    (0..COLOUR_PIXELS).map(|i| patch[i].abs_diff(digit[i % DIGIT_PIXELS])).collect()
}

/// Colour images with their labels.
#[derive(Debug, Clone, Default)]
pub struct ContextSet {
    /// `n` images `[3, 28, 28]`, back to back.
    pub pixels: Vec<u8>,
    /// Each image rendered with the other background (same digit, same photo crop), for
    /// counterfactual flip rates. Empty when not generated.
    pub flipped: Vec<u8>,
    /// Digit class 0–9.
    pub digit: Vec<u8>,
    /// Target concept: 1 when the digit is ≥ 5.
    pub target: Vec<u8>,
    /// Protected concept: 1 = photograph background, 0 = plain.
    pub protected: Vec<u8>,
    /// Binary dilated digit mask (pixel > 0 after 3 × 3 dilation), `[28, 28]` per image.
    pub mask: Vec<u8>,
}

impl ContextSet {
    pub fn len(&self) -> usize {
        self.digit.len()
    }

    pub fn is_empty(&self) -> bool {
        self.digit.is_empty()
    }

    pub fn image(&self, i: usize) -> &[u8] {
        &self.pixels[i * COLOUR_PIXELS..(i + 1) * COLOUR_PIXELS]
    }

    /// Fraction of images whose background agrees with the target (ρ as generated).
    pub fn agreement(&self) -> f64 {
        let same = self.target.iter().zip(&self.protected).filter(|(t, p)| t == p).count();
        same as f64 / self.len().max(1) as f64
    }

    /// Renders `digits` (indices into `split`) with backgrounds drawn so that P(protected =
    /// target) = `rho`; every image also gets its flipped twin.
    pub fn render(
        split: &MnistSplit,
        digits: &[usize],
        rho: f64,
        backgrounds: &Backgrounds,
        rng: &mut ChaCha8Rng,
    ) -> Self {
        let mut set = ContextSet::default();
        for &i in digits {
            let digit = split.image(i);
            let label = split.labels[i];
            let target = u8::from(label >= 5);
            let agree = rng.random::<f64>() < rho;
            let protected = if agree { target } else { 1 - target };
            let patch = backgrounds.random_patch(rng);
            let (photo, flat) = (blend(digit, &patch), plain(digit));
            let (shown, other) = if protected == 1 { (photo, flat) } else { (flat, photo) };
            set.pixels.extend_from_slice(&shown);
            set.flipped.extend_from_slice(&other);
            set.digit.push(label);
            set.target.push(target);
            set.protected.push(protected);
            set.mask.extend(dilated_mask(digit));
        }
        set
    }
}

impl ContextSet {
    /// Backgrounds without a digit (Experiment 1's contextual test set: the paper's forest paths
    /// and coasts without animals): alternately plain black and a
    /// random photograph crop.
    /// `digit` is 10 ("none"), `target` equals `protected` (the class each background goes with
    /// in the target-labelled training set), masks are empty, no flipped twins.
    pub fn backgrounds_only(n: usize, backgrounds: &Backgrounds, rng: &mut ChaCha8Rng) -> Self {
        let mut set = ContextSet::default();
        for i in 0..n {
            let protected = u8::from(i % 2 == 1);
            let patch = backgrounds.random_patch(rng);
            if protected == 1 {
                set.pixels.extend_from_slice(&patch);
            } else {
                set.pixels.extend(std::iter::repeat_n(0u8, COLOUR_PIXELS));
            }
            set.digit.push(10);
            set.target.push(protected);
            set.protected.push(protected);
            set.mask.extend(std::iter::repeat_n(0u8, DIGIT_PIXELS));
        }
        set
    }
}

/// Pixels of the digit (> 0) dilated by one pixel in each direction.
pub fn dilated_mask(digit: &[u8]) -> Vec<u8> {
    let s = DIGIT_SIDE as isize;
    (0..DIGIT_PIXELS)
        .map(|p| {
            let (y, x) = ((p / DIGIT_SIDE) as isize, (p % DIGIT_SIDE) as isize);
            let hit = (-1..=1).any(|dy| {
                (-1..=1).any(|dx| {
                    let (yy, xx) = (y + dy, x + dx);
                    (0..s).contains(&yy) && (0..s).contains(&xx) && digit[(yy * s + xx) as usize] > 0
                })
            });
            u8::from(hit)
        })
        .collect()
}

/// Sizes and correlation of a Context-MNIST build.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ContextMnistConfig {
    /// P(background agrees with the target) in the target-labelled training set and the IID test.
    pub rho: f64,
    /// Target-labelled training images (from MNIST train).
    pub target_train: usize,
    /// Context-labelled training images (background labels only; background independent of the digit).
    pub context_train: usize,
    /// Test digits (from MNIST test), each rendered for the IID, balanced and reversed tests.
    pub test: usize,
    /// Probe-train images (MNIST train, disjoint from the training sets), balanced backgrounds.
    pub probe_train: usize,
    /// Probe-test images (MNIST test, disjoint from the test digits), balanced backgrounds.
    pub probe_test: usize,
    pub seed: u64,
}

impl Default for ContextMnistConfig {
    fn default() -> Self {
        Self {
            rho: 0.95,
            target_train: 10_000,
            context_train: 10_000,
            test: 4_000,
            probe_train: 5_000,
            probe_test: 4_000,
            seed: 0,
        }
    }
}

/// Context-MNIST: the paper's two-part training set, three test sets and the probe splits.
#[derive(Debug, Clone)]
pub struct ContextMnist {
    pub config: ContextMnistConfig,
    pub target_train: ContextSet,
    pub context_train: ContextSet,
    pub test_iid: ContextSet,
    pub test_balanced: ContextSet,
    pub test_reversed: ContextSet,
    pub probe_train: ContextSet,
    pub probe_test: ContextSet,
}

impl ContextMnistConfig {
    pub fn check(&self, mnist: &Mnist) -> Result<()> {
        if !(0.0..=1.0).contains(&self.rho) {
            return Err(DataError::invalid("rho", self.rho, "not a probability in [0, 1]"));
        }
        let train = self.target_train + self.context_train + self.probe_train;
        if train > mnist.train.len() || self.test + self.probe_test > mnist.test.len() {
            return Err(DataError::invalid(
                "sizes",
                format!("{train} training and {} test digits", self.test + self.probe_test),
                format!("MNIST has {} training and {} test digits", mnist.train.len(), mnist.test.len()),
            ));
        }
        if self.target_train == 0 || self.test == 0 {
            return Err(DataError::invalid(
                "sizes",
                format!("target_train {} and test {}", self.target_train, self.test),
                "both must be ≥ 1",
            ));
        }
        Ok(())
    }

    /// Builds every split (digits drawn without replacement, disjoint between splits).
    pub fn build(&self, mnist: &Mnist, backgrounds: &Backgrounds) -> Result<ContextMnist> {
        self.check(mnist)?;
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        let train_order = rand::seq::index::sample(&mut rng, mnist.train.len(), mnist.train.len()).into_vec();
        let test_order = rand::seq::index::sample(&mut rng, mnist.test.len(), mnist.test.len()).into_vec();
        let (t, c, p) = (self.target_train, self.context_train, self.probe_train);
        let test_digits = &test_order[..self.test];
        // The three tests share their digits and photo crops; only the background assignment
        // differs (one RNG stream per test, same seed), so their accuracies compare like with like.
        let test_with = |rho: f64| {
            let mut r = ChaCha8Rng::seed_from_u64(self.seed ^ 0x7e57);
            ContextSet::render(&mnist.test, test_digits, rho, backgrounds, &mut r)
        };
        Ok(ContextMnist {
            config: *self,
            target_train: ContextSet::render(&mnist.train, &train_order[..t], self.rho, backgrounds, &mut rng),
            context_train: ContextSet::render(&mnist.train, &train_order[t..t + c], 0.5, backgrounds, &mut rng),
            probe_train: ContextSet::render(&mnist.train, &train_order[t + c..t + c + p], 0.5, backgrounds, &mut rng),
            probe_test: ContextSet::render(
                &mnist.test,
                &test_order[self.test..self.test + self.probe_test],
                0.5,
                backgrounds,
                &mut rng,
            ),
            test_iid: test_with(self.rho),
            test_balanced: test_with(0.5),
            test_reversed: test_with(1.0 - self.rho),
        })
    }
}

/// MNIST → MNIST-M: every digit of `split` blended over a random BSDS500 crop (labels kept).
pub fn mnist_m(split: &MnistSplit, backgrounds: &Backgrounds, seed: u64) -> (Vec<u8>, Vec<u8>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut pixels = Vec::with_capacity(split.len() * COLOUR_PIXELS);
    for i in 0..split.len() {
        let patch = backgrounds.random_patch(&mut rng);
        pixels.extend(blend(split.image(i), &patch));
    }
    (pixels, split.labels.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_backgrounds() -> Backgrounds {
        let photo = |v: u8| Photo { width: 40, height: 30, rgb: vec![v; 40 * 30 * 3] };
        Backgrounds { photos: vec![photo(200), photo(100)] }
    }

    fn fake_mnist(n: usize) -> MnistSplit {
        let mut pixels = vec![0u8; n * DIGIT_PIXELS];
        for i in 0..n {
            pixels[i * DIGIT_PIXELS + 14 * 28 + 14] = 255;
        }
        MnistSplit { pixels, labels: (0..n).map(|i| (i % 10) as u8).collect() }
    }

    #[test]
    fn blend_is_the_absolute_difference_and_plain_is_grey() {
        let digit: Vec<u8> = (0..DIGIT_PIXELS).map(|i| (i % 256) as u8).collect();
        let patch = vec![100u8; COLOUR_PIXELS];
        let b = blend(&digit, &patch);
        assert_eq!(b[0], 100);
        assert_eq!(b[255], 155);
        assert_eq!(b[DIGIT_PIXELS + 100], 0);
        let p = plain(&digit);
        assert_eq!(&p[..DIGIT_PIXELS], &digit[..]);
        assert_eq!(&p[2 * DIGIT_PIXELS..], &digit[..]);
    }

    #[test]
    fn backgrounds_only_are_half_photos_and_carry_no_digit() {
        let bg = fake_backgrounds();
        let set = ContextSet::backgrounds_only(10, &bg, &mut ChaCha8Rng::seed_from_u64(1));
        assert_eq!(set.len(), 10);
        assert_eq!(set.protected.iter().map(|&p| usize::from(p)).sum::<usize>(), 5);
        for i in 0..10 {
            let photo = set.image(i).iter().all(|&v| v == 200 || v == 100);
            let black = set.image(i).iter().all(|&v| v == 0);
            assert!(if set.protected[i] == 1 { photo } else { black });
        }
        assert_eq!(set.agreement(), 1.0);
    }

    #[test]
    fn dilation_grows_a_point_to_a_3x3_square() {
        let split = fake_mnist(1);
        let m = dilated_mask(split.image(0));
        assert_eq!(m.iter().map(|&v| usize::from(v)).sum::<usize>(), 9);
        assert_eq!(m[13 * 28 + 13], 1);
        assert_eq!(m[12 * 28 + 14], 0);
    }

    /// The generated correlation is the requested one (within 3 binomial standard errors), and
    /// each flipped twin carries the other background.
    #[test]
    fn rendered_sets_have_the_requested_correlation() {
        let split = fake_mnist(4000);
        let bg = fake_backgrounds();
        let digits: Vec<usize> = (0..4000).collect();
        for rho in [0.5, 0.9, 0.99] {
            let mut rng = ChaCha8Rng::seed_from_u64(3);
            let set = ContextSet::render(&split, &digits, rho, &bg, &mut rng);
            let se = (rho * (1.0 - rho) / 4000.0).sqrt().max(1e-3);
            assert!((set.agreement() - rho).abs() < 3.0 * se, "ρ = {rho}: {}", set.agreement());
            for i in 0..50 {
                // A plain image's corner pixel is 0, a photo's is the photo's value.
                let corner = set.image(i)[0];
                let twin = set.flipped[i * COLOUR_PIXELS];
                assert_eq!(corner == 0, set.protected[i] == 0);
                assert_eq!(twin == 0, set.protected[i] == 1);
            }
        }
    }
}
