//! The nine UCI regression sets from `$HEDGE_DATA_DIR/uci/`: sizes and splits as documented in
//! `uci/SOURCE.md`. These tests fail, rather than skip, when the data is missing.

use hedge_data::{data_dir, UciDataset};

#[test]
fn every_uci_set_has_the_documented_shape_and_disjoint_covering_splits() {
    let dir = data_dir().expect("set HEDGE_DATA_DIR to the shared data folder");
    // (name, rows, features, splits, train size, test size) from uci/SOURCE.md.
    let expected = [
        ("bostonHousing", 506, 13, 20, 455, 51),
        ("concrete", 1030, 8, 20, 927, 103),
        ("energy", 768, 8, 20, 691, 77),
        ("kin8nm", 8192, 8, 20, 7373, 819),
        ("naval-propulsion-plant", 11934, 16, 20, 10741, 1193),
        ("power-plant", 9568, 4, 20, 8611, 957),
        ("protein-tertiary-structure", 45730, 9, 5, 41157, 4573),
        ("wine-quality-red", 1599, 11, 20, 1439, 160),
        ("yacht", 308, 6, 20, 277, 31),
    ];
    for (name, rows, features, splits, train, test) in expected {
        let d = UciDataset::load(&dir, name).unwrap();
        assert_eq!((d.rows(), d.features, d.splits), (rows, features, splits), "{name}");
        for k in [0, splits - 1] {
            let s = d.split(k).unwrap();
            assert_eq!((s.train.len(), s.test.len()), (train, test), "{name} split {k}");
            let mut all: Vec<usize> = s.train.iter().chain(&s.test).copied().collect();
            all.sort_unstable();
            assert!(all.iter().copied().eq(0..rows), "{name} split {k} must cover every row once");
        }
    }
    // yacht's first row (data.txt line 1): -2.3 0.568 4.78 3.99 3.17 0.125 | target 0.11.
    let yacht = UciDataset::load(&dir, "yacht").unwrap();
    assert_eq!(yacht.row(0), &[-2.3, 0.568, 4.78, 3.99, 3.17, 0.125]);
    assert_eq!(yacht.targets[0], 0.11);
}
