//! The real N-digit MNIST tables and MNIST files from `$HEDGE_DATA_DIR` (CI sets it to
//! `../shared/data`). These tests fail, rather than skip, when the data is missing.

use std::sync::Arc;

use hedge_data::ndigit::table_path;
use hedge_data::{data_dir, Corruption, ImageDataset, Mnist, NDigitProtocol, NDigitSplit, NDigitTable};

const OPEN: NDigitProtocol = NDigitProtocol::OpenSet;
const INSTANCE: NDigitProtocol = NDigitProtocol::Instance;
use rand_chacha::rand_core::SeedableRng;

fn mnist() -> (std::path::PathBuf, Arc<Mnist>) {
    let dir = data_dir().expect("set HEDGE_DATA_DIR to the shared data folder");
    let mnist = Mnist::load(&dir.join("mnist")).unwrap();
    (dir, Arc::new(mnist))
}

#[test]
fn mnist_has_the_published_counts() {
    let (_, m) = mnist();
    assert_eq!((m.train.len(), m.test.len()), (60_000, 10_000));
    let mut counts = [0usize; 10];
    m.test.labels.iter().for_each(|&l| counts[l as usize] += 1);
    // SOURCE.md: test label counts 0-9.
    assert_eq!(counts, [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]);
}

#[test]
fn every_standard_table_passes_the_integrity_check_with_the_documented_counts() {
    let (dir, m) = mnist();
    // (digits, protocol, split, classes, images) from n-digit-mnist/SOURCE.md.
    let expected = [
        (2, OPEN, NDigitSplit::Train, 70, 99_960),
        (2, OPEN, NDigitSplit::TestSeen, 70, 9_940),
        (2, OPEN, NDigitSplit::TestUnseen, 30, 9_990),
        (3, OPEN, NDigitSplit::Train, 700, 99_400),
        (3, OPEN, NDigitSplit::TestSeen, 100, 10_000),
        (3, OPEN, NDigitSplit::TestUnseen, 100, 10_000),
        (2, INSTANCE, NDigitSplit::Train, 100, 100_000),
        (2, INSTANCE, NDigitSplit::Test, 100, 10_000),
        (3, INSTANCE, NDigitSplit::Train, 1000, 100_000),
        (3, INSTANCE, NDigitSplit::Test, 1000, 10_000),
        // The instance protocol's second test set is the number tables' test_seen.
        (2, INSTANCE, NDigitSplit::TestSeen, 70, 9_940),
        (3, INSTANCE, NDigitSplit::TestSeen, 100, 10_000),
    ];
    for (digits, protocol, split, classes, images) in expected {
        let d = ImageDataset::load(&dir, digits, protocol, split, &m).unwrap();
        assert_eq!(d.len(), images, "{digits}-digit {split:?}");
        assert_eq!(d.classes().len(), classes, "{digits}-digit {split:?}");
        assert_eq!(d.width(), 28 * digits);
    }
}

#[test]
fn unseen_classes_are_disjoint_from_training_classes() {
    let (dir, m) = mnist();
    for digits in [2, 3] {
        let train = ImageDataset::load(&dir, digits, OPEN, NDigitSplit::Train, &m).unwrap().classes();
        let seen = ImageDataset::load(&dir, digits, OPEN, NDigitSplit::TestSeen, &m).unwrap().classes();
        let unseen = ImageDataset::load(&dir, digits, OPEN, NDigitSplit::TestUnseen, &m).unwrap().classes();
        assert!(unseen.iter().all(|c| !train.contains(c)));
        assert!(seen.iter().all(|c| train.contains(c)));
    }
}

/// The instance protocol (the paper's tables): the test set holds exactly the training classes,
/// every class with the same number of images (Appendix D scores all 100 test centroids), and
/// no MNIST digit image of a test image is a training digit image (train tables index MNIST's
/// training set, test tables its test set).
#[test]
fn instance_tables_test_every_training_class_on_other_images() {
    let (dir, m) = mnist();
    for (digits, per_class_test) in [(2, 100), (3, 10)] {
        let train = ImageDataset::load(&dir, digits, INSTANCE, NDigitSplit::Train, &m).unwrap();
        let test = ImageDataset::load(&dir, digits, INSTANCE, NDigitSplit::Test, &m).unwrap();
        assert_eq!(train.classes(), test.classes(), "{digits}-digit");
        assert!(test.classes_smaller_than(per_class_test).is_empty());
        assert_eq!(test.len(), test.classes().len() * per_class_test);
        // Pixels differ: the first test image is not any training image of its class.
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
        let probe = test.render_batch(&[0], &Corruption::Clean, &mut rng);
        let same: Vec<usize> = (0..train.len()).filter(|&i| train.labels[i] == test.labels[0]).collect();
        assert!(same.iter().all(|&i| train.render_batch(&[i], &Corruption::Clean, &mut rng) != probe));
    }
    // Held-out training images share digit crops with other training images: the 200,000 digit
    // slots of the N = 2 training table use 58,443 distinct MNIST training digits (about 3.4 uses
    // each), which is why validation images score above test images (results/hib/README.md).
    let train = ImageDataset::load(&dir, 2, INSTANCE, NDigitSplit::Train, &m).unwrap();
    let mut digits = train.parts.clone();
    digits.sort_unstable();
    digits.dedup();
    assert_eq!((train.parts.len(), digits.len()), (200_000, 58_443));
    // test_seen under the instance protocol: 100 training classes of 100 images at N = 3 (the
    // test set of the paper's first version) on MNIST test digits, as the instance test images.
    let train = ImageDataset::load(&dir, 3, INSTANCE, NDigitSplit::Train, &m).unwrap();
    let seen = ImageDataset::load(&dir, 3, INSTANCE, NDigitSplit::TestSeen, &m).unwrap();
    assert!(seen.classes().iter().all(|c| train.classes().contains(c)));
    assert!(seen.classes_smaller_than(100).is_empty());
    assert_eq!(seen.parts, ImageDataset::load(&dir, 3, OPEN, NDigitSplit::TestSeen, &m).unwrap().parts);
    // A split the protocol lacks is refused with the splits it has.
    let e = ImageDataset::load(&dir, 2, INSTANCE, NDigitSplit::TestUnseen, &m).unwrap_err().to_string();
    assert!(e.contains("train, test, test_seen") && e.contains("open-set"), "{e}");
    let e = ImageDataset::load(&dir, 2, OPEN, NDigitSplit::Test, &m).unwrap_err().to_string();
    assert!(e.contains("instance protocol"), "{e}");
}

#[test]
fn a_table_that_does_not_match_its_labels_is_refused() {
    let (dir, m) = mnist();
    let path = table_path(&dir, 2, OPEN, NDigitSplit::TestUnseen);
    let mut table = NDigitTable::read(&path).unwrap();
    table.check(&path, &m.test.labels).unwrap();
    // Point digit 1 of sample 0 of class 0 at an image of a different digit.
    let want = table.chosen_numbers[0] % 10;
    let wrong = m.test.labels.iter().position(|&l| l as i64 != want).unwrap();
    table.image_ids[1] = wrong as i64;
    let msg = table.check(&path, &m.test.labels).unwrap_err().to_string();
    assert!(msg.contains("image_ids[0, 0, 1]") && msg.contains("test_unseen"), "{msg}");
    // Training tables index 60k images: checking one against the 10k test labels fails.
    let train_path = table_path(&dir, 2, OPEN, NDigitSplit::Train);
    let train = NDigitTable::read(&train_path).unwrap();
    assert!(train.check(&train_path, &m.test.labels).is_err());
}

#[test]
fn rendering_places_each_mnist_digit_in_its_slot() {
    let (dir, m) = mnist();
    let d = ImageDataset::load(&dir, 3, OPEN, NDigitSplit::TestSeen, &m).unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
    let img = d.render_batch(&[17], &Corruption::Clean, &mut rng);
    for p in 0..3 {
        let digit = m.test.image(d.parts[17 * 3 + p] as usize);
        for row in 0..28 {
            for col in 0..28 {
                let got = img[row * 84 + p * 28 + col];
                assert_eq!(got, digit[row * 28 + col] as f32 / 255.0);
            }
        }
    }
    // The corrupt twin only ever darkens pixels, and darkens some.
    let corrupt = d.render_batch(&[17], &Corruption::Corrupt { seed: 1 }, &mut rng);
    assert!(corrupt.iter().zip(&img).all(|(c, i)| *c == *i || *c == 0.0));
}

#[test]
fn a_missing_data_dir_says_where_the_data_goes() {
    let err = Mnist::load(std::path::Path::new("/nonexistent/mnist")).unwrap_err().to_string();
    assert!(err.contains("/nonexistent/mnist/train-images-idx3-ubyte"), "{err}");
    assert!(err.contains("SOURCE.md"), "{err}");
}

/// Recomposition (`hib train --recompose`) draws from the train table's own digit images: at
/// N = 2 the instance train table's 100,000 composites use 58,443 distinct MNIST training digits
/// (`results/hib/digit-overlap.json`, counted with NumPy by scripts/hib-digit-overlap.py), and
/// every recomposed image shows its class — each 28-pixel block is one of the pool's images of
/// that position's digit — while not being the table's own composite.
#[test]
fn recomposed_images_show_their_class_made_of_the_tables_own_digits() {
    let (dir, m) = mnist();
    let train = ImageDataset::load(&dir, 2, INSTANCE, NDigitSplit::Train, &m).unwrap();
    let pool = train.digit_pool().unwrap();
    assert_eq!(pool.len(), 58_443);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
    let indices = [0usize, 12_345, 99_999];
    let images = train.render_recomposed_batch(&indices, &pool, &Corruption::Clean, &mut rng);
    let len = train.image_len();
    for (k, &i) in indices.iter().enumerate() {
        let image = &images[k * len..(k + 1) * len];
        let label = train.labels[i];
        for (p, value) in [(0, label / 10), (1, label % 10)] {
            let block: Vec<u8> = (0..28)
                .flat_map(|row| image[row * 56 + p * 28..row * 56 + (p + 1) * 28].iter())
                .map(|&x| (x * 255.0).round() as u8)
                .collect();
            assert!(
                pool.by_digit[value as usize].iter().any(|&part| m.train.image(part as usize) == &block[..]),
                "image {i} (class {label}), digit {p}: not one of the pool's images of a {value}"
            );
        }
        assert_ne!(train.render_batch(&[i], &Corruption::Clean, &mut rng), image, "image {i} was not recomposed");
    }
}

/// Validation images with new digits (`validation_digits = "unused"`): the instance train table
/// leaves 60,000 - 58,443 = 1,557 MNIST training digits unused (the count of
/// `results/hib/digit-overlap.json`, made with NumPy), and images redrawn from them keep their
/// classes, use only those digits, and repeat no digit image at a position within a class while
/// the pool has enough of that digit.
#[test]
fn digits_redrawn_from_the_unused_pool_are_new_and_keep_their_classes() {
    let (dir, m) = mnist();
    let train = ImageDataset::load(&dir, 2, INSTANCE, NDigitSplit::Train, &m).unwrap();
    let pool = train.unused_digits().unwrap();
    assert_eq!(pool.len(), 1_557);
    let used: std::collections::HashSet<u32> = train.parts.iter().copied().collect();
    for (value, parts) in pool.by_digit.iter().enumerate() {
        assert!(parts.iter().all(|&p| !used.contains(&p) && m.train.labels[p as usize] as usize == value));
    }
    let held_out = train.subset(&train.first_per_class(50));
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    let redrawn = held_out.with_digits_redrawn(&pool, &mut rng).unwrap();
    assert_eq!(redrawn.labels, held_out.labels);
    let mut seen = std::collections::HashSet::new();
    for (i, &label) in redrawn.labels.iter().enumerate() {
        for (p, value) in [(0, label / 10), (1, label % 10)] {
            let part = redrawn.parts[i * 2 + p];
            assert_eq!(m.train.labels[part as usize] as u32, value, "image {i} (class {label}), digit {p}");
            assert!(!used.contains(&part), "image {i}: digit {p} is a training digit");
            if pool.by_digit[value as usize].len() >= 50 {
                assert!(seen.insert((label, p, part)), "class {label} repeats digit image {part} at position {p}");
            }
        }
    }
    // Seeded: the same seed draws the same digits, another seed others.
    let again = held_out.with_digits_redrawn(&pool, &mut rand_chacha::ChaCha8Rng::seed_from_u64(7)).unwrap();
    let other = held_out.with_digits_redrawn(&pool, &mut rand_chacha::ChaCha8Rng::seed_from_u64(8)).unwrap();
    assert_eq!(again.parts, redrawn.parts);
    assert_ne!(other.parts, redrawn.parts);
    // A pool without some digit says which and what to do.
    let mut short = pool.clone();
    short.by_digit[3].clear();
    let e = held_out.with_digits_redrawn(&short, &mut rng).unwrap_err().to_string();
    assert!(e.contains("validation_digits") && e.contains("digit 3") && e.contains("shared"), "{e}");
}

/// Training images with shifted digits (`digit_shift`): without a shift they are drawn and
/// rendered exactly as `render_batch` renders them (so runs without it replay as before); with a
/// shift of up to 2 pixels every 28-pixel block is its MNIST digit moved by some (down, right) in
/// [-2, 2]² with the space it left black, and some blocks did move.
#[test]
fn shifted_training_digits_are_their_digit_moved_within_its_cell() {
    let (dir, m) = mnist();
    let train = ImageDataset::load(&dir, 2, INSTANCE, NDigitSplit::Train, &m).unwrap();
    let indices: Vec<usize> = (0..40).map(|k| k * 2_477).collect();
    let corrupt = Corruption::Random { probability: 0.2 };
    let plain = train.render_batch(&indices, &corrupt, &mut rand_chacha::ChaCha8Rng::seed_from_u64(3));
    let unshifted =
        train.render_training_batch(&indices, None, 0, &corrupt, &mut rand_chacha::ChaCha8Rng::seed_from_u64(3));
    assert_eq!(plain, unshifted);
    let shifted = train.render_training_batch(
        &indices,
        None,
        2,
        &Corruption::Clean,
        &mut rand_chacha::ChaCha8Rng::seed_from_u64(3),
    );
    let len = train.image_len();
    let mut moved = 0;
    for (k, &i) in indices.iter().enumerate() {
        for p in 0..2 {
            let block: Vec<f32> =
                (0..28).flat_map(|row| shifted[k * len + row * 56 + p * 28..][..28].iter().copied()).collect();
            let digit = m.train.image(train.parts[i * 2 + p] as usize);
            let moved_by = |down: i32, right: i32| -> Vec<f32> {
                (0..28i32)
                    .flat_map(|row| (0..28i32).map(move |col| (row - down, col - right)))
                    .map(|(r, c)| {
                        if (0..28).contains(&r) && (0..28).contains(&c) {
                            digit[(r * 28 + c) as usize] as f32 / 255.0
                        } else {
                            0.0
                        }
                    })
                    .collect()
            };
            let found = (-2..=2).flat_map(|d| (-2..=2).map(move |r| (d, r))).find(|&(d, r)| moved_by(d, r) == block);
            let (down, right) =
                found.unwrap_or_else(|| panic!("image {i}, digit {p}: not its digit moved by ≤ 2 pixels"));
            moved += usize::from((down, right) != (0, 0));
        }
    }
    assert!(moved > 40, "only {moved} of 80 digits moved");
}
