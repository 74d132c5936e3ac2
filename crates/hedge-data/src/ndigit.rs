//! N-digit MNIST (Oh et al., ICLR 2019) assembled from the official index tables.
//!
//! An image of class "47" is MNIST digit images of a 4 and a 7 side by side, 28 x 56 pixels.
//! The tables (`$HEDGE_DATA_DIR/n-digit-mnist/standard_datasets/dataset_mnist_{N}_{instance,number}_{split}.npz`)
//! hold indices into MNIST; train tables index the MNIST training set, test tables the test set.
//!
//! Two protocols ([`NDigitProtocol`]) use them: `instance` (every class in training and in test,
//! disjoint images; the paper's tables) and `open-set` (the "number" gap: test classes never seen
//! in training, hedge's extension).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rand::Rng;
use serde::{Deserialize, Serialize};

use crate::datadir::require_file;
use crate::images::ImageSet;
use crate::mnist::{Mnist, MnistSplit, DIGIT_PIXELS, DIGIT_SIDE};
use crate::npy::{read_npz, NpyArray};
use crate::occlusion::Corruption;
use crate::{DataError, Result};

/// Which standard tables a run trains and tests on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum NDigitProtocol {
    /// The `instance` tables: all 100 (N = 2) or 1,000 (N = 3) classes in training and in test,
    /// disjoint images; splits `train` and `test`. The protocol of the paper's tables (its
    /// Appendix D scores the test set's 100 class centroids; Table 3's 100,000 / 10,000 images).
    /// `test_seen` (the number tables' seen-class test images, every class of which the instance
    /// train table holds) is a second test set an evaluation can name: at N = 3 it is the test
    /// set the paper's first version describes, 100 classes of 100 images.
    Instance,
    /// The `number` tables: test_unseen's classes never appear in training; splits `train`,
    /// `test_seen` and `test_unseen`. The paper's future work (novel classes), hedge's extension.
    OpenSet,
}

impl NDigitProtocol {
    /// The protocol of files written before protocols existed (every run was open-set then):
    /// the serde default of reports and run configs that name none.
    pub fn before_protocols() -> Self {
        NDigitProtocol::OpenSet
    }

    /// The name on the command line and in reports (`instance`, `open-set`).
    pub fn name(self) -> &'static str {
        match self {
            NDigitProtocol::Instance => "instance",
            NDigitProtocol::OpenSet => "open-set",
        }
    }

    /// The table family of `split`'s file (`instance`, `number`): test_seen and test_unseen are
    /// number tables under either protocol.
    fn table_family(self, split: NDigitSplit) -> &'static str {
        match (self, split) {
            (NDigitProtocol::Instance, NDigitSplit::Train | NDigitSplit::Test) => "instance",
            _ => "number",
        }
    }

    /// The test split a run is scored on by default: `test` (instance) or `test_unseen`.
    pub fn main_test_split(self) -> NDigitSplit {
        match self {
            NDigitProtocol::Instance => NDigitSplit::Test,
            NDigitProtocol::OpenSet => NDigitSplit::TestUnseen,
        }
    }

    /// The splits a run of this protocol can be trained or evaluated on.
    pub fn splits(self) -> &'static [NDigitSplit] {
        match self {
            NDigitProtocol::Instance => &[NDigitSplit::Train, NDigitSplit::Test, NDigitSplit::TestSeen],
            NDigitProtocol::OpenSet => &[NDigitSplit::Train, NDigitSplit::TestSeen, NDigitSplit::TestUnseen],
        }
    }

    /// The test splits the protocol's tables report, which together hold every test class once:
    /// `test` (instance; its `test_seen` repeats classes of `test` on other images and is
    /// evaluated only when named), or `test_seen` and `test_unseen` (open-set).
    pub fn test_splits(self) -> &'static [NDigitSplit] {
        match self {
            NDigitProtocol::Instance => &[NDigitSplit::Test],
            NDigitProtocol::OpenSet => &[NDigitSplit::TestSeen, NDigitSplit::TestUnseen],
        }
    }

    /// Refuses a split this protocol has no table for, saying which it has.
    pub fn check_split(self, split: NDigitSplit) -> Result<()> {
        if self.splits().contains(&split) {
            return Ok(());
        }
        if split == NDigitSplit::Validation {
            return Err(DataError::invalid(
                "split",
                split.name(),
                "validation images have no table: a run holds them out of train as its config says \
                 (validation_fraction); evaluate them with `hedge hib eval --run RUN --split validation`",
            ));
        }
        let names: Vec<&str> = self.splits().iter().map(|s| s.name()).collect();
        Err(DataError::invalid(
            "split",
            split.name(),
            format!(
                "the {} protocol has the splits {}; {}",
                self.name(),
                names.join(", "),
                match self {
                    NDigitProtocol::Instance => "test_unseen belongs to the open-set protocol",
                    NDigitProtocol::OpenSet => "test belongs to the instance protocol",
                }
            ),
        ))
    }
}

impl std::str::FromStr for NDigitProtocol {
    type Err = DataError;

    /// Parses `instance` or `open-set`.
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "instance" => Ok(NDigitProtocol::Instance),
            "open-set" => Ok(NDigitProtocol::OpenSet),
            other => Err(DataError::invalid(
                "protocol",
                other,
                "use instance (the paper's tables: every class in training and test) or open-set (test classes never \
                 trained on)",
            )),
        }
    }
}

/// A split of the standard tables: `train` and `test` (instance protocol, with `test_seen` as a
/// second test set), or `train`, `test_seen` and `test_unseen` (open-set protocol: the "number"
/// gap, train classes and unseen-test classes disjoint).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NDigitSplit {
    Train,
    /// The instance protocol's test images (every training class, other images).
    Test,
    /// The number tables' test images of training classes: 70 classes of 142 images (N = 2) or
    /// 100 of 100 (N = 3), MNIST test digits. Under the instance protocol every one of these
    /// classes is a training class too.
    TestSeen,
    /// The number tables' test images of the classes the open-set training table leaves out.
    TestUnseen,
    /// A run's validation images: held out of `train` as its config says (no table of its own).
    Validation,
}

impl NDigitSplit {
    /// The table file suffix (`train`, `test`, `test_seen`, `test_unseen`).
    pub fn name(&self) -> &'static str {
        match self {
            NDigitSplit::Train => "train",
            NDigitSplit::Test => "test",
            NDigitSplit::TestSeen => "test_seen",
            NDigitSplit::TestUnseen => "test_unseen",
            NDigitSplit::Validation => "validation",
        }
    }

    /// Parses `train`, `test`, `test_seen`, `test_unseen` or `validation`.
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "train" => Ok(NDigitSplit::Train),
            "test" => Ok(NDigitSplit::Test),
            "test_seen" => Ok(NDigitSplit::TestSeen),
            "test_unseen" => Ok(NDigitSplit::TestUnseen),
            "validation" => Ok(NDigitSplit::Validation),
            other => Err(DataError::invalid(
                "split",
                other,
                "not a split; use train, test or test_seen (instance protocol), train, test_seen or test_unseen (open-set), \
                 or validation (a run's held-out training images)",
            )),
        }
    }
}

impl std::fmt::Display for NDigitSplit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Path of the index table of `digits`-digit MNIST, `split` of `protocol`, under the data
/// directory (the split is not checked against the protocol: [`NDigitProtocol::check_split`]).
pub fn table_path(data_dir: &Path, digits: usize, protocol: NDigitProtocol, split: NDigitSplit) -> PathBuf {
    data_dir.join("n-digit-mnist/standard_datasets").join(format!(
        "dataset_mnist_{digits}_{}_{}.npz",
        protocol.table_family(split),
        split.name()
    ))
}

/// An index table: `image_ids[c, s, p]` is the MNIST index of digit `p` of sample `s` of class `c`.
#[derive(Debug, Clone)]
pub struct NDigitTable {
    pub classes: usize,
    pub per_class: usize,
    pub digits: usize,
    pub image_ids: Vec<i64>,
    pub chosen_numbers: Vec<i64>,
}

impl NDigitTable {
    /// Reads and shape-checks a table.
    pub fn read(path: &Path) -> Result<Self> {
        require_file(
            path,
            "the N-digit MNIST index tables go in $HEDGE_DATA_DIR/n-digit-mnist/standard_datasets/ \
             (google/n-digit-mnist, folder standard_datasets; see that folder's SOURCE.md)",
        )?;
        let arrays = read_npz(path)?;
        let get = |name: &str| -> Result<&NpyArray> {
            arrays
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, a)| a)
                .ok_or_else(|| DataError::format(path, "N-digit MNIST table", format!("no array named '{name}'")))
        };
        let bad = |what: String| DataError::format(path, "N-digit MNIST table", what);
        let ids = get("image_ids")?;
        let numbers = get("chosen_numbers")?;
        let spn = get("sample_per_number")?;
        if ids.shape.len() != 3 {
            return Err(bad(format!("'image_ids' has shape {:?}, expected (classes, samples, digits)", ids.shape)));
        }
        let (classes, per_class, digits) = (ids.shape[0], ids.shape[1], ids.shape[2]);
        if numbers.shape != [classes] {
            return Err(bad(format!(
                "'chosen_numbers' has shape {:?} but 'image_ids' has {classes} classes",
                numbers.shape
            )));
        }
        let spn_value = spn.as_i64().map_err(|w| bad(format!("'sample_per_number': {w}")))?;
        if spn_value.len() != 1 || spn_value[0] != per_class as i64 {
            return Err(bad(format!(
                "'sample_per_number' is {spn_value:?} but 'image_ids' has {per_class} samples per class"
            )));
        }
        Ok(NDigitTable {
            classes,
            per_class,
            digits,
            image_ids: ids.as_i64().map_err(|w| bad(format!("'image_ids': {w}")))?.to_vec(),
            chosen_numbers: numbers.as_i64().map_err(|w| bad(format!("'chosen_numbers': {w}")))?.to_vec(),
        })
    }

    /// Checks `labels[image_ids[c, s, p]] == digit p of chosen_numbers[c]` for every entry.
    ///
    /// # Errors
    /// [`DataError::Integrity`] naming the first class, sample and position that fails.
    pub fn check(&self, path: &Path, labels: &[u8]) -> Result<()> {
        let fail = |what: String| DataError::Integrity { path: path.to_path_buf(), what };
        let max_number = 10i64.pow(self.digits as u32);
        for c in 0..self.classes {
            let number = self.chosen_numbers[c];
            if !(0..max_number).contains(&number) {
                return Err(fail(format!(
                    "class {c} is the number {number}, which has more than {} digits",
                    self.digits
                )));
            }
            for s in 0..self.per_class {
                for p in 0..self.digits {
                    let id = self.image_ids[(c * self.per_class + s) * self.digits + p];
                    let want = (number / 10i64.pow((self.digits - 1 - p) as u32)) % 10;
                    let got = usize::try_from(id).ok().and_then(|i| labels.get(i));
                    match got {
                        None => {
                            return Err(fail(format!(
                                "image_ids[{c}, {s}, {p}] = {id} is outside the {} MNIST images; \
                                 is this a test table paired with the training images?",
                                labels.len()
                            )))
                        }
                        Some(&l) if l as i64 != want => {
                            return Err(fail(format!(
                                "image_ids[{c}, {s}, {p}] = {id} is MNIST digit {l}, but digit {p} of class \
                                 number {number} is {want}; the table does not belong to these MNIST files"
                            )))
                        }
                        _ => {}
                    }
                }
            }
        }
        Ok(())
    }
}

/// Where an [`ImageDataset`]'s pixels come from.
#[derive(Debug, Clone)]
enum Pixels {
    /// MNIST digits, `digits` side by side: `parts` index the MNIST split.
    Mnist(Arc<MnistSplit>),
    /// A user's images ([`ImageSet`]): `parts` index its images, one each.
    Dense(Arc<ImageSet>),
}

/// The distinct MNIST digit images of an N-digit set, by digit value ([`ImageDataset::digit_pool`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DigitPool {
    /// Indices into the MNIST split, for each digit value 0–9, sorted.
    pub by_digit: [Vec<u32>; 10],
}

impl DigitPool {
    /// Distinct digit images in the pool.
    pub fn len(&self) -> usize {
        self.by_digit.iter().map(Vec::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The refusal of new digit images for a user's image set, which is not made of digits.
fn no_new_digits() -> DataError {
    DataError::invalid(
        "validation_digits",
        "unused",
        "new digit images exist only for N-digit MNIST; validate on your own images' held-out images (shared)",
    )
}

/// Labelled images ready to render, with the occlusion corruption: one split of N-digit MNIST,
/// or a user's own image set ([`ImageDataset::from_images`]).
#[derive(Debug, Clone)]
pub struct ImageDataset {
    /// Digits per N-digit image; 1 for a user's images (one occluded part each).
    pub digits: usize,
    /// The role the images play (a user's set: the part of it they were split into).
    pub split: NDigitSplit,
    /// Indices into the pixel source, `digits` per image, leftmost digit first.
    pub parts: Vec<u32>,
    /// The class of each image (N-digit: the number it shows).
    pub labels: Vec<u32>,
    source: Pixels,
}

impl ImageDataset {
    /// Loads and integrity-checks `digits`-digit MNIST, `split` of `protocol`, from the data
    /// directory.
    pub fn load(
        data_dir: &Path,
        digits: usize,
        protocol: NDigitProtocol,
        split: NDigitSplit,
        mnist: &Arc<Mnist>,
    ) -> Result<Self> {
        if !(2..=3).contains(&digits) {
            return Err(DataError::invalid("digits", digits, "N-digit MNIST has standard tables for 2 and 3 only"));
        }
        protocol.check_split(split)?;
        let path = table_path(data_dir, digits, protocol, split);
        let table = NDigitTable::read(&path)?;
        if table.digits != digits {
            return Err(DataError::format(
                &path,
                "N-digit MNIST table",
                format!("it has {} digits per image, expected {digits}", table.digits),
            ));
        }
        let source = match split {
            NDigitSplit::Train => &mnist.train,
            _ => &mnist.test,
        };
        table.check(&path, &source.labels)?;
        let n = table.classes * table.per_class;
        let labels = (0..n).map(|i| table.chosen_numbers[i / table.per_class] as u32).collect();
        let parts = table.image_ids.iter().map(|&i| i as u32).collect();
        Ok(ImageDataset { digits, split, parts, labels, source: Pixels::Mnist(Arc::new(source.clone())) })
    }

    /// A user's images in the role `split` (their labels are the set's class indices).
    pub fn from_images(images: ImageSet, split: NDigitSplit) -> Self {
        ImageDataset {
            digits: 1,
            split,
            parts: (0..images.len() as u32).collect(),
            labels: images.labels.clone(),
            source: Pixels::Dense(Arc::new(images)),
        }
    }

    pub fn len(&self) -> usize {
        self.labels.len()
    }

    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// Channels of an image (1 for N-digit MNIST).
    pub fn channels(&self) -> usize {
        match &self.source {
            Pixels::Mnist(_) => 1,
            Pixels::Dense(set) => set.channels,
        }
    }

    /// `[channels, height, width]` of one image.
    pub fn shape(&self) -> [usize; 3] {
        [self.channels(), self.height(), self.width()]
    }

    /// Image height in pixels.
    pub fn height(&self) -> usize {
        match &self.source {
            Pixels::Mnist(_) => DIGIT_SIDE,
            Pixels::Dense(set) => set.height,
        }
    }

    /// Image width in pixels (N-digit: `28 * digits`).
    pub fn width(&self) -> usize {
        match &self.source {
            Pixels::Mnist(_) => DIGIT_SIDE * self.digits,
            Pixels::Dense(set) => set.width,
        }
    }

    /// Values of one image (`channels * height * width`).
    pub fn image_len(&self) -> usize {
        match &self.source {
            Pixels::Mnist(_) => DIGIT_PIXELS * self.digits,
            Pixels::Dense(set) => set.image_len(),
        }
    }

    /// The images at `indices` (in that order) as a dataset of their own, e.g. validation
    /// classes carved out of `train`. Indices must be `< self.len()`.
    pub fn subset(&self, indices: &[usize]) -> ImageDataset {
        let d = self.digits;
        ImageDataset {
            digits: d,
            split: self.split,
            parts: indices.iter().flat_map(|&i| self.parts[i * d..(i + 1) * d].iter().copied()).collect(),
            labels: indices.iter().map(|&i| self.labels[i]).collect(),
            source: self.source.clone(),
        }
    }

    /// The classes with fewer than `min` images here (a K-nearest-neighbour majority of K = 5
    /// cannot identify a class with fewer than 4 images in a leave-one-out evaluation).
    pub fn classes_smaller_than(&self, min: usize) -> Vec<u32> {
        let mut counts = std::collections::BTreeMap::<u32, usize>::new();
        self.labels.iter().for_each(|&l| *counts.entry(l).or_default() += 1);
        counts.into_iter().filter(|&(_, n)| n < min).map(|(c, _)| c).collect()
    }

    /// Indices of the first `n` images of every class, in file order (a class with fewer keeps
    /// all of its images).
    pub fn first_per_class(&self, n: usize) -> Vec<usize> {
        let mut taken = std::collections::HashMap::<u32, usize>::new();
        (0..self.labels.len())
            .filter(|&i| {
                let count = taken.entry(self.labels[i]).or_default();
                *count += 1;
                *count <= n
            })
            .collect()
    }

    /// The distinct class numbers, sorted.
    pub fn classes(&self) -> Vec<u32> {
        let mut c = self.labels.clone();
        c.sort_unstable();
        c.dedup();
        c
    }

    /// Writes image `index`, in [0, 1], channel-major `[C, H, W]` (N-digit: `28 x 28N`), into
    /// `out`, with the occlusion `corruption` draws (a square per digit; one per user image,
    /// blacking out every channel).
    ///
    /// # Shapes
    /// `out`: `[C * H * W]`.
    pub fn render_into<R: Rng + ?Sized>(&self, index: usize, corruption: &Corruption, rng: &mut R, out: &mut [f32]) {
        match &self.source {
            Pixels::Mnist(source) => {
                let parts = &self.parts[index * self.digits..(index + 1) * self.digits];
                self.render_digits_into(source, parts, 0, index, corruption, rng, out);
            }
            Pixels::Dense(set) => {
                out.copy_from_slice(set.image(self.parts[index] as usize));
                let (h, w) = (set.height, set.width);
                if let Some(occ) = corruption.draw_within(index, 1, h, w, rng).pop().flatten() {
                    for plane in out.chunks_exact_mut(h * w) {
                        occ.apply_at(plane, w, 0);
                    }
                }
            }
        }
    }

    /// The MNIST digit images `parts` side by side, each moved within its 28-pixel cell by a
    /// shift drawn uniformly from [-`max_shift`, `max_shift`] pixels down and right (the space it
    /// leaves black; `max_shift = 0` draws nothing), then `corruption`'s occlusions (drawn for
    /// image `index`).
    #[allow(clippy::too_many_arguments)]
    fn render_digits_into<R: Rng + ?Sized>(
        &self,
        source: &MnistSplit,
        parts: &[u32],
        max_shift: usize,
        index: usize,
        corruption: &Corruption,
        rng: &mut R,
        out: &mut [f32],
    ) {
        let width = self.width();
        let side = DIGIT_SIDE as isize;
        for (p, &part) in parts.iter().enumerate() {
            let digit = source.image(part as usize);
            let (down, right) = if max_shift == 0 {
                (0, 0)
            } else {
                let s = max_shift as i32;
                (rng.random_range(-s..=s) as isize, rng.random_range(-s..=s) as isize)
            };
            for row in 0..side {
                let dst = &mut out[row as usize * width + p * DIGIT_SIDE..][..DIGIT_SIDE];
                let from_row = row - down;
                for (col, d) in (0..side).zip(dst.iter_mut()) {
                    let from_col = col - right;
                    *d = if (0..side).contains(&from_row) && (0..side).contains(&from_col) {
                        digit[(from_row * side + from_col) as usize] as f32 / 255.0
                    } else {
                        0.0
                    };
                }
            }
        }
        for (p, occ) in corruption.draw(index, self.digits, rng).into_iter().enumerate() {
            if let Some(occ) = occ {
                occ.apply(out, width, p);
            }
        }
    }

    /// The distinct MNIST digit images this N-digit set's images are made of, by digit value:
    /// the material [`ImageDataset::render_recomposed_batch`] draws new images of the same
    /// classes from.
    ///
    /// # Errors
    /// A user's image set ([`ImageDataset::from_images`]), which is not made of digits.
    pub fn digit_pool(&self) -> Result<DigitPool> {
        let Pixels::Mnist(source) = &self.source else {
            return Err(DataError::Run(hedge_run::RunError::InvalidConfig {
                field: "recompose",
                value: "true".into(),
                reason: "recomposing images from their digits needs N-digit MNIST, not a user's image set".into(),
            }));
        };
        let mut by_digit: [Vec<u32>; 10] = Default::default();
        for &part in &self.parts {
            by_digit[source.labels[part as usize] as usize].push(part);
        }
        for parts in &mut by_digit {
            parts.sort_unstable();
            parts.dedup();
        }
        Ok(DigitPool { by_digit })
    }

    /// The MNIST digit images of this set's source split that none of its images uses, by digit
    /// value: new digits for validation images ([`ImageDataset::with_digits_redrawn`]). At N = 2
    /// the instance train table leaves 1,557 of the 60,000 training digits unused.
    ///
    /// # Errors
    /// A user's image set ([`ImageDataset::from_images`]), which is not made of digits.
    pub fn unused_digits(&self) -> Result<DigitPool> {
        let Pixels::Mnist(source) = &self.source else {
            return Err(no_new_digits());
        };
        let mut used = vec![false; source.len()];
        for &part in &self.parts {
            used[part as usize] = true;
        }
        let mut by_digit: [Vec<u32>; 10] = Default::default();
        for (i, _) in used.iter().enumerate().filter(|(_, &u)| !u) {
            by_digit[source.labels[i] as usize].push(i as u32);
        }
        Ok(DigitPool { by_digit })
    }

    /// These images with every digit image replaced by one of `pool` of the same value: the same
    /// classes, in the same order, shown with new digits. Within a class each position walks a
    /// shuffled copy of its candidates, so a class repeats a digit image at a position only once
    /// it has more images than the pool has images of that digit.
    ///
    /// # Errors
    /// A user's image set, or a digit value this set needs that `pool` has no image of.
    pub fn with_digits_redrawn<R: Rng + ?Sized>(&self, pool: &DigitPool, rng: &mut R) -> Result<ImageDataset> {
        use rand::seq::SliceRandom;
        let Pixels::Mnist(source) = &self.source else {
            return Err(no_new_digits());
        };
        // (class, position) -> its shuffled candidates and how many were taken.
        let mut decks: std::collections::HashMap<(u32, usize), (Vec<u32>, usize)> = Default::default();
        let mut parts = Vec::with_capacity(self.parts.len());
        for (i, &label) in self.labels.iter().enumerate() {
            for p in 0..self.digits {
                let value = source.labels[self.parts[i * self.digits + p] as usize] as usize;
                let (deck, taken) = match decks.entry((label, p)) {
                    std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                    std::collections::hash_map::Entry::Vacant(e) => {
                        let mut deck = pool.by_digit[value].clone();
                        if deck.is_empty() {
                            return Err(DataError::invalid(
                                "validation_digits",
                                "unused",
                                format!(
                                    "no unused MNIST image of the digit {value} is left for class {label}; validate on \
                                     held-out images (shared)"
                                ),
                            ));
                        }
                        deck.shuffle(rng);
                        e.insert((deck, 0))
                    }
                };
                parts.push(deck[*taken % deck.len()]);
                *taken += 1;
            }
        }
        Ok(ImageDataset {
            digits: self.digits,
            split: self.split,
            parts,
            labels: self.labels.clone(),
            source: self.source.clone(),
        })
    }

    /// Renders images of the classes of `indices` made afresh: each digit of image `i` replaced
    /// by a digit image of the same value drawn uniformly from `pool`, so a class is shown with
    /// digit combinations its table never holds. Then `corruption` as in
    /// [`ImageDataset::render_into`]. A user's image set renders as [`ImageDataset::render_batch`].
    ///
    /// # Shapes
    /// returns `[indices.len() * image_len()]`, image-major.
    pub fn render_recomposed_batch<R: Rng + ?Sized>(
        &self,
        indices: &[usize],
        pool: &DigitPool,
        corruption: &Corruption,
        rng: &mut R,
    ) -> Vec<f32> {
        self.render_training_batch(indices, Some(pool), 0, corruption, rng)
    }

    /// Renders training images: each digit image replaced from `pool` when one is given (as
    /// [`ImageDataset::render_recomposed_batch`]), each digit moved within its cell by up to
    /// `max_shift` pixels each way (uniform; 0: not moved, nothing drawn), then `corruption`. With
    /// neither it draws and renders exactly as [`ImageDataset::render_batch`]; a user's image set
    /// renders as that always.
    ///
    /// # Shapes
    /// returns `[indices.len() * image_len()]`, image-major.
    pub fn render_training_batch<R: Rng + ?Sized>(
        &self,
        indices: &[usize],
        pool: Option<&DigitPool>,
        max_shift: usize,
        corruption: &Corruption,
        rng: &mut R,
    ) -> Vec<f32> {
        let Pixels::Mnist(source) = &self.source else {
            return self.render_batch(indices, corruption, rng);
        };
        let len = self.image_len();
        let mut out = vec![0.0f32; indices.len() * len];
        let mut parts = vec![0u32; self.digits];
        for (chunk, &i) in out.chunks_exact_mut(len).zip(indices) {
            for (p, part) in parts.iter_mut().enumerate() {
                let own = self.parts[i * self.digits + p];
                let candidates = pool.map_or(&[][..], |pool| &pool.by_digit[source.labels[own as usize] as usize]);
                // The image's own digit is in the pool whenever the pool came from this set.
                *part = if candidates.is_empty() { own } else { candidates[rng.random_range(0..candidates.len())] };
            }
            self.render_digits_into(source, &parts, max_shift, i, corruption, rng, chunk);
        }
        out
    }

    /// Renders several images into one contiguous buffer.
    ///
    /// # Shapes
    /// returns `[indices.len() * image_len()]`, image-major.
    pub fn render_batch<R: Rng + ?Sized>(&self, indices: &[usize], corruption: &Corruption, rng: &mut R) -> Vec<f32> {
        let len = self.image_len();
        let mut out = vec![0.0f32; indices.len() * len];
        for (chunk, &i) in out.chunks_exact_mut(len).zip(indices) {
            self.render_into(i, corruption, rng, chunk);
        }
        out
    }
}
