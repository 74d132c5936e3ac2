//! BSDS500 backgrounds and Context-MNIST / MNIST-M built from `$HEDGE_DATA_DIR`: the documented
//! photo sizes, the requested background–target correlations measured on the generated sets,
//! and disjoint splits. These tests fail, rather than skip, when the data is missing.

use hedge_data::context::{mnist_m, COLOUR_PIXELS};
use hedge_data::{data_dir, Backgrounds, ContextMnistConfig, Mnist};

#[test]
fn bsds500_has_200_photos_in_two_orientations() {
    let dir = data_dir().expect("set HEDGE_DATA_DIR to the shared data folder");
    let bg = Backgrounds::load(&dir.join("bsds500")).unwrap();
    assert_eq!(bg.photos.len(), 200);
    let landscape = bg.photos.iter().filter(|p| (p.width, p.height) == (481, 321)).count();
    let portrait = bg.photos.iter().filter(|p| (p.width, p.height) == (321, 481)).count();
    // bsds500/SOURCE.md: 137 landscape, 63 portrait.
    assert_eq!((landscape, portrait), (137, 63));
    assert!(Backgrounds::load(&dir.join("mnist")).is_err(), "a folder without images/train must be refused");
}

#[test]
fn context_mnist_has_the_requested_correlations() {
    let dir = data_dir().expect("set HEDGE_DATA_DIR to the shared data folder");
    let mnist = Mnist::load(&dir.join("mnist")).unwrap();
    let bg = Backgrounds::load(&dir.join("bsds500")).unwrap();
    let config = ContextMnistConfig {
        rho: 0.9,
        target_train: 4000,
        context_train: 2000,
        test: 3000,
        probe_train: 1000,
        probe_test: 1000,
        seed: 7,
    };
    let data = config.build(&mnist, &bg).unwrap();
    // Three binomial standard errors at n = 4000 / 3000.
    let close = |got: f64, want: f64, n: f64| (got - want).abs() < 3.0 * (want * (1.0 - want) / n).sqrt().max(0.005);
    assert!(close(data.target_train.agreement(), 0.9, 4000.0), "{}", data.target_train.agreement());
    assert!(close(data.context_train.agreement(), 0.5, 2000.0), "{}", data.context_train.agreement());
    assert!(close(data.test_iid.agreement(), 0.9, 3000.0));
    assert!(close(data.test_balanced.agreement(), 0.5, 3000.0));
    assert!(close(data.test_reversed.agreement(), 0.1, 3000.0), "{}", data.test_reversed.agreement());
    assert!(close(data.probe_test.agreement(), 0.5, 1000.0));
    // The three tests show the same digits; the target is balanced-ish (digits ≥ 5 ≈ 49 %).
    assert_eq!(data.test_iid.digit, data.test_reversed.digit);
    let share = data.test_iid.target.iter().map(|&t| f64::from(t)).sum::<f64>() / 3000.0;
    assert!((0.45..0.53).contains(&share), "{share}");
    assert_eq!(data.test_iid.pixels.len(), 3000 * COLOUR_PIXELS);
    assert!(ContextMnistConfig { rho: 1.5, ..config }.build(&mnist, &bg).is_err());
    assert!(ContextMnistConfig { target_train: 70_000, ..config }.build(&mnist, &bg).is_err());
}

#[test]
fn mnist_m_blends_every_digit_over_a_photo() {
    let dir = data_dir().expect("set HEDGE_DATA_DIR to the shared data folder");
    let mnist = Mnist::load(&dir.join("mnist")).unwrap();
    let bg = Backgrounds::load(&dir.join("bsds500")).unwrap();
    let (pixels, labels) = mnist_m(&mnist.test, &bg, 1);
    assert_eq!(labels, mnist.test.labels);
    assert_eq!(pixels.len(), mnist.test.len() * COLOUR_PIXELS);
    // Natural photos are rarely black: a blended image's mean is far above a plain digit's (~33).
    let mean =
        pixels[..1000 * COLOUR_PIXELS].iter().map(|&v| f64::from(v)).sum::<f64>() / (1000 * COLOUR_PIXELS) as f64;
    assert!(mean > 60.0, "{mean}");
}

#[test]
fn adult_has_aif360s_row_counts_and_no_sex_feature() {
    let dir = data_dir().expect("set HEDGE_DATA_DIR to the shared data folder");
    let adult = hedge_data::Adult::load(&dir.join("adult")).unwrap();
    // Complete rows, as AIF360's AdultDataset keeps them: 30,162 train + 15,060 test = 45,222.
    assert_eq!((adult.train.len(), adult.test.len()), (30_162, 15_060));
    assert!(adult.feature_names.iter().all(|f| !f.starts_with("sex")));
    assert!(adult.feature_names.iter().any(|f| f == "relationship=Wife"));
    assert_eq!(adult.train.features.len(), adult.train.len() * adult.features());
    // Known base rates of the cleaned training set: 24.9 % earn > 50K, 32.4 % are women.
    let rate = |v: &[u8]| v.iter().map(|&x| f64::from(x)).sum::<f64>() / v.len() as f64;
    assert!((rate(&adult.train.target) - 0.249).abs() < 0.002, "{}", rate(&adult.train.target));
    assert!((rate(&adult.train.protected) - 0.324).abs() < 0.002, "{}", rate(&adult.train.protected));
}
