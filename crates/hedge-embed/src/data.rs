//! The images a HIB command reads, loaded once and passed down: N-digit MNIST's tables from the
//! papers' data root (MNIST itself read once for every split), or a user's own image set
//! (decoded once, whatever parts of it training, watching and evaluation ask for).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use hedge_data::{DataRoot, ImageDataset, ImageSet, Mnist, NDigitProtocol, NDigitSplit};
use serde::{Deserialize, Serialize};

use crate::{HibConfig, OwnImages, Result};

/// The images of one command: what [`HibData::split`], [`HibData::role`] and
/// [`HibData::own_images`] return is read from disk the first time only.
#[derive(Debug)]
pub struct HibData {
    root: DataRoot,
    mnist: Mutex<Option<Arc<Mnist>>>,
    tables: Mutex<HashMap<(usize, NDigitProtocol, NDigitSplit), ImageDataset>>,
    own: Mutex<HashMap<PathBuf, Arc<ImageSet>>>,
    own_decodes: Mutex<usize>,
}

impl HibData {
    /// The images under the papers' data root `root` (checked only when N-digit MNIST is asked
    /// for: a run on a user's own images never needs it).
    pub fn new(root: DataRoot) -> Self {
        HibData {
            root,
            mnist: Mutex::default(),
            tables: Mutex::default(),
            own: Mutex::default(),
            own_decodes: Mutex::default(),
        }
    }

    /// The papers' data root.
    pub fn root(&self) -> &DataRoot {
        &self.root
    }

    /// `digits`-digit MNIST's `split` of `protocol` (integrity-checked).
    ///
    /// # Errors
    /// A split the protocol has no table for, a missing data root, and every error of
    /// [`ImageDataset::load`].
    pub fn split(&self, digits: usize, protocol: NDigitProtocol, split: NDigitSplit) -> Result<ImageDataset> {
        protocol.check_split(split)?;
        let key = (digits, protocol, split);
        if let Some(table) = self.tables.lock().unwrap_or_else(PoisonError::into_inner).get(&key) {
            return Ok(table.clone());
        }
        let dir = self.root.dir()?;
        let mnist = {
            let mut held = self.mnist.lock().unwrap_or_else(PoisonError::into_inner);
            match &*held {
                Some(m) => Arc::clone(m),
                None => Arc::clone(held.insert(Arc::new(Mnist::load(&dir.join("mnist"))?))),
            }
        };
        let table = ImageDataset::load(dir, digits, protocol, split, &mnist)?;
        self.tables.lock().unwrap_or_else(PoisonError::into_inner).insert(key, table.clone());
        Ok(table)
    }

    /// `config` training on the user's labelled images at `path` (a folder or an .npz; the
    /// open-set protocol): the path made absolute, so that a resumed run and `hib eval` find the
    /// images from any folder, the input shape read from the images, and `unseen_classes`
    /// whole classes held out (default: a fifth of the classes, at least 2). The rule
    /// `hib train --data` and Python's `hedge.hib.train(data=...)` share.
    pub fn with_own_images(
        &self,
        config: HibConfig,
        path: &Path,
        unseen_classes: Option<usize>,
        seen_test_fraction: f64,
        split_seed: u64,
    ) -> Result<HibConfig> {
        let path = std::fs::canonicalize(path).map_err(|e| crate::EmbedError::io(path, e))?;
        let set = self.own_images(&path)?;
        let classes = set.class_names.len();
        Ok(config.with_data(OwnImages {
            path,
            shape: [set.channels, set.height, set.width],
            unseen_classes: unseen_classes.unwrap_or((classes / 5).max(2)),
            seen_test_fraction,
            split_seed,
        }))
    }

    /// A user's image folder or `.npz`, decoded the first time it is asked for.
    ///
    /// # Errors
    /// Every error of [`ImageSet::read`].
    pub fn own_images(&self, path: &Path) -> Result<Arc<ImageSet>> {
        let mut own = self.own.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(set) = own.get(path) {
            return Ok(Arc::clone(set));
        }
        let set = Arc::new(ImageSet::read(path)?);
        *self.own_decodes.lock().unwrap_or_else(PoisonError::into_inner) += 1;
        tracing::info!(
            "decoded {} images of {} classes ({}x{}x{}) from {}",
            set.len(),
            set.class_names.len(),
            set.channels,
            set.height,
            set.width,
            path.display()
        );
        own.insert(path.to_path_buf(), Arc::clone(&set));
        Ok(set)
    }

    /// How many times a user's image set was decoded from disk (once per set a command reads).
    pub fn own_decodes(&self) -> usize {
        *self.own_decodes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The images of `split`'s role for `config`: N-digit MNIST's split of `config.protocol`, or
    /// the matching part of the user's image set (`train`: the seen classes less their held-out
    /// images; `test_seen`: those images; `test_unseen`: the held-out classes), split as
    /// `config.data` says.
    ///
    /// # Errors
    /// A split the protocol has no table for (`test` is the instance protocol's, `test_seen` and
    /// `test_unseen` the open-set's and a user's set's), the user's images no longer having the
    /// shape the run was made with (the model would not fit them), and every error of
    /// [`ImageSet::read`].
    pub fn role(&self, config: &HibConfig, split: NDigitSplit) -> Result<ImageDataset> {
        let Some(own) = &config.data.own_images else {
            return self.split(config.data.digits, config.data.protocol, split);
        };
        if matches!(split, NDigitSplit::Test | NDigitSplit::Validation) {
            return Err(crate::EmbedError::invalid(
                "split",
                split.name(),
                "a run on your own images has the parts train, test_seen and test_unseen (its validation images are \
                 held out of train: `hedge hib eval --run RUN --split validation`)",
            ));
        }
        let [train, seen, unseen] = self.own_parts(own)?;
        let part = match split {
            NDigitSplit::Train => train,
            NDigitSplit::TestSeen => seen,
            NDigitSplit::TestUnseen | NDigitSplit::Test | NDigitSplit::Validation => unseen,
        };
        Ok(ImageDataset::from_images(part, split))
    }

    /// The split of a user's images that `config.data` describes (`None` for N-digit MNIST).
    pub fn own_split(&self, config: &HibConfig) -> Result<Option<OwnSplit>> {
        let Some(own) = &config.data.own_images else { return Ok(None) };
        let set = self.checked_own(own)?;
        let names = |part: &ImageSet| -> Vec<String> {
            let mut classes: Vec<u32> = part.labels.clone();
            classes.sort_unstable();
            classes.dedup();
            classes.into_iter().map(|c| set.class_names[c as usize].clone()).collect()
        };
        let [train, seen, unseen] = self.own_parts(own)?;
        Ok(Some(OwnSplit {
            path: own.path.clone(),
            seen_classes: names(&train),
            unseen_classes: names(&unseen),
            train_images: train.len(),
            test_seen_images: seen.len(),
            test_unseen_images: unseen.len(),
        }))
    }

    /// The user's images, checked to have the shape the run was made with.
    fn checked_own(&self, own: &OwnImages) -> Result<Arc<ImageSet>> {
        let set = self.own_images(&own.path)?;
        let shape = [set.channels, set.height, set.width];
        if shape != own.shape {
            return Err(crate::EmbedError::invalid(
                "data",
                own.path.display(),
                format!(
                    "its images are now {shape:?} (channels, height, width) but the run was made for {:?}; restore \
                     the images or train a new run",
                    own.shape
                ),
            ));
        }
        Ok(set)
    }

    /// `[train, test_seen, test_unseen]` of a user's set, split as `own` says.
    fn own_parts(&self, own: &OwnImages) -> Result<[ImageSet; 3]> {
        let set = self.checked_own(own)?;
        let (seen, unseen) = ImageSet::clone(&set).split_classes(own.unseen_classes, own.split_seed)?;
        let (train, test_seen) = seen.split_images(own.seen_test_fraction, own.split_seed)?;
        Ok([train, test_seen, unseen])
    }
}

/// Which of a user's classes a run trains on and which it holds out (`data_split.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OwnSplit {
    /// The image folder or `.npz`.
    pub path: PathBuf,
    /// Class names of `train` and `test_seen`.
    pub seen_classes: Vec<String>,
    /// Class names of `test_unseen`.
    pub unseen_classes: Vec<String>,
    /// Images in each part.
    pub train_images: usize,
    pub test_seen_images: usize,
    pub test_unseen_images: usize,
}

/// Where a run on a user's images lists its split.
pub const OWN_SPLIT_FILE: &str = "data_split.json";
