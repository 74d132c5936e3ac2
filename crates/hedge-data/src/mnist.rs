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
