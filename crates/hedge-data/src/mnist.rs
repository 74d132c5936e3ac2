//! MNIST-style image/label sets (MNIST, Fashion-MNIST) from their IDX files.

use std::path::Path;

use crate::datadir::require_file;
use crate::idx::{read_idx, IMAGES_MAGIC, LABELS_MAGIC};
use crate::{DataError, Result};

/// Side of an MNIST digit in pixels.
pub const DIGIT_SIDE: usize = 28;
/// Pixels of one MNIST digit.
pub const DIGIT_PIXELS: usize = DIGIT_SIDE * DIGIT_SIDE;

/// One split of MNIST: `len` images of 28 x 28 uint8 pixels and their labels 0..=9.
#[derive(Debug, Clone)]
pub struct MnistSplit {
    pub pixels: Vec<u8>,
    pub labels: Vec<u8>,
}

impl MnistSplit {
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// The 784 pixels of image `i`, row-major.
    pub fn image(&self, i: usize) -> &[u8] {
        &self.pixels[i * DIGIT_PIXELS..(i + 1) * DIGIT_PIXELS]
    }

    /// Loads an images file and a labels file and checks that they agree.
    ///
    /// # Errors
    /// Missing files, bad IDX headers, images that are not 28 x 28, counts that differ
    /// between the two files, and labels above 9, each naming the file.
    pub fn load(images_path: &Path, labels_path: &Path) -> Result<Self> {
        let hint = "download the four MNIST IDX files (see $HEDGE_DATA_DIR/mnist/SOURCE.md) into this folder";
        require_file(images_path, hint)?;
        require_file(labels_path, hint)?;
        let images = read_idx(images_path, IMAGES_MAGIC)?;
        let labels = read_idx(labels_path, LABELS_MAGIC)?;
        if images.dims[1..] != [DIGIT_SIDE, DIGIT_SIDE] {
            return Err(DataError::format(
                images_path,
                "MNIST images",
                format!("images are {:?}, expected 28 x 28", &images.dims[1..]),
            ));
        }
        if images.dims[0] != labels.dims[0] {
            return Err(DataError::format(
                labels_path,
                "MNIST labels",
                format!(
                    "{} labels for {} images in '{}'; the two files must come from the same split",
                    labels.dims[0],
                    images.dims[0],
                    images_path.display()
                ),
            ));
        }
        if let Some((i, l)) = labels.data.iter().enumerate().find(|(_, &l)| l > 9) {
            return Err(DataError::format(
                labels_path,
                "MNIST labels",
                format!("label {l} at index {i} is not a digit 0-9"),
            ));
        }
        // Every split of MNIST and Fashion-MNIST holds all ten classes (about a tenth each): a
        // file without one is damaged or from another set, and a run on it would be silently
        // wrong (a one-class "Fashion-MNIST" exports, trains and scores without complaint).
        let mut seen = [false; 10];
        for &l in &labels.data {
            seen[l as usize] = true;
        }
        if let Some(missing) = seen.iter().position(|&s| !s) {
            return Err(DataError::format(
                labels_path,
                "MNIST labels",
                format!(
                    "no image is labelled {missing} ({} of the 10 classes appear in {} labels); every split of MNIST \
                     and Fashion-MNIST has all ten, so the file is damaged or from another set: restore it from \
                     the source its folder's SOURCE.md names",
                    seen.iter().filter(|&&s| s).count(),
                    labels.data.len()
                ),
            ));
        }
        Ok(MnistSplit { pixels: images.data, labels: labels.data })
    }
}

/// Both MNIST splits, from `<dir>/{train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]`.
#[derive(Debug, Clone)]
pub struct Mnist {
    pub train: MnistSplit,
    pub test: MnistSplit,
}

impl Mnist {
    /// Loads MNIST (or Fashion-MNIST, same file names) from `dir`, gzipped or not.
    pub fn load(dir: &Path) -> Result<Self> {
        let pick = |stem: &str| {
            let gz = dir.join(format!("{stem}.gz"));
            if gz.is_file() {
                gz
            } else {
                dir.join(stem)
            }
        };
        Ok(Mnist {
            train: MnistSplit::load(&pick("train-images-idx3-ubyte"), &pick("train-labels-idx1-ubyte"))?,
            test: MnistSplit::load(&pick("t10k-images-idx3-ubyte"), &pick("t10k-labels-idx1-ubyte"))?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An IDX file of `dims` unsigned bytes (magic 0x0000_08NN, NN the number of dimensions).
    fn idx(dims: &[u32], data: &[u8]) -> Vec<u8> {
        let mut bytes = vec![0, 0, 8, dims.len() as u8];
        for d in dims {
            bytes.extend(d.to_be_bytes());
        }
        bytes.extend(data);
        bytes
    }

    #[test]
    fn a_labels_file_without_every_class_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let images = dir.path().join("images");
        let labels = dir.path().join("labels");
        std::fs::write(&images, idx(&[20, 28, 28], &[7; 20 * 28 * 28])).unwrap();
        let all: Vec<u8> = (0..20).map(|i| i % 10).collect();
        std::fs::write(&labels, idx(&[20], &all)).unwrap();
        assert_eq!(MnistSplit::load(&images, &labels).unwrap().len(), 20);
        std::fs::write(&labels, idx(&[20], &[0; 20])).unwrap();
        let e = MnistSplit::load(&images, &labels).unwrap_err().to_string();
        assert!(e.contains("no image is labelled 1") && e.contains("1 of the 10") && e.contains("labels"), "{e}");
    }
}
