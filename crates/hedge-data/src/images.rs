//! A user's own labelled images: an image folder `ROOT/<label>/<file>.{png,jpg,jpeg}`
//! (torchvision's ImageFolder layout) or an `.npz` with `images` (`[N, H, W]` or `[N, C, H, W]`,
//! uint8 or float in [0, 1]) and `labels` (`[N]`, integers).
//!
//! ```no_run
//! use hedge_data::images::ImageSet;
//! let set = ImageSet::read("photos/".as_ref())?;
//! let (seen, unseen) = set.split_classes(3, 0)?;
//! # Ok::<(), hedge_data::DataError>(())
//! ```
//!
//! Every image of a set has one size and one channel count (greyscale images are widened to RGB
//! when the folder mixes the two); a set that breaks that is refused naming the file and the fix.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::npy::{NpyArray, NpyData};
use crate::{DataError, Result};

/// The largest image side accepted: the HIB trunk's cost grows with the pixels, and a photo
/// straight from a camera is almost certainly not what the user meant to embed.
pub const MAX_SIDE: usize = 1024;

/// Fewer images than this in a class cannot give a matching pair to train or verify with.
pub const MIN_PER_CLASS: usize = 2;

/// Labelled images, pixels in [0, 1].
#[derive(Debug, Clone, PartialEq)]
pub struct ImageSet {
    /// The folder or file the set was read from.
    pub source: PathBuf,
    pub channels: usize,
    pub height: usize,
    pub width: usize,
    /// `[N, C, H, W]`, row-major.
    pub pixels: Vec<f32>,
    /// `[N]`: an index into `class_names`.
    pub labels: Vec<u32>,
    /// A folder's sub-folder names (sorted), or an npz's label values as text.
    pub class_names: Vec<String>,
    /// `[N]`: where each image came from, for a person reading results: `<label>/<file>` in a
    /// folder, `#<row>` in an npz.
    pub names: Vec<String>,
}

/// One decoded image: channels 1 (grey) or 3 (RGB), interleaved.
pub(crate) struct Decoded {
    channels: usize,
    height: usize,
    width: usize,
    interleaved: Vec<u8>,
}

impl ImageSet {
    /// Reads a folder of class sub-folders, or an `.npz` file.
    pub fn read(path: &Path) -> Result<Self> {
        if path.is_dir() {
            Self::read_folder(path)
        } else if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("npz")) {
            Self::read_npz(path)
        } else if path.exists() {
            Err(DataError::format(
                path,
                "image data",
                "expected a folder of class sub-folders (ROOT/<label>/<image>.png) or an .npz with 'images' and 'labels'",
            ))
        } else {
            Err(DataError::MissingFile { path: path.to_path_buf(), hint: "no such image folder or .npz file".into() })
        }
    }

    /// Reads `root/<label>/<file>.{png,jpg,jpeg}` (other files are ignored; hidden files and
    /// folders too). Classes are the sub-folders in sorted order.
    ///
    /// # Errors
    /// No class folder; a class with fewer than [`MIN_PER_CLASS`] images; an image that does not
    /// decode; images of different sizes; an image side over [`MAX_SIDE`].
    pub fn read_folder(root: &Path) -> Result<Self> {
        let listing = |dir: &Path| -> Result<Vec<PathBuf>> {
            let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
                .map_err(|e| DataError::io(dir, e))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| !p.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.')))
                .collect();
            entries.sort();
            Ok(entries)
        };
        let classes: Vec<PathBuf> = listing(root)?.into_iter().filter(|p| p.is_dir()).collect();
        if classes.is_empty() {
            return Err(DataError::format(
                root,
                "image folder",
                "has no class sub-folders; lay images out as ROOT/<label>/<image>.png, one folder per class",
            ));
        }
        let mut decoded = Vec::new();
        let mut listed = Vec::new();
        let mut labels = Vec::new();
        let mut class_names = Vec::new();
        let mut names = Vec::new();
        for (c, dir) in classes.iter().enumerate() {
            let files: Vec<PathBuf> = listing(dir)?
                .into_iter()
                .filter(|p| {
                    p.is_file()
                        && p.extension()
                            .is_some_and(|e| ["png", "jpg", "jpeg"].iter().any(|x| e.eq_ignore_ascii_case(x)))
                })
                .collect();
            if files.len() < MIN_PER_CLASS {
                return Err(DataError::format(
                    dir,
                    "image folder",
                    format!(
                        "class '{}' has {} PNG/JPEG image(s); every class needs at least {MIN_PER_CLASS} (a matching pair)",
                        dir.file_name().unwrap_or_default().to_string_lossy(),
                        files.len()
                    ),
                ));
            }
            for file in files {
                names.push(file.strip_prefix(root).unwrap_or(&file).to_string_lossy().into_owned());
                listed.push(file);
                labels.push(c as u32);
            }
            class_names.push(dir.file_name().unwrap_or_default().to_string_lossy().into_owned());
        }
        // The first image's size, times the count, bounds what the set takes (bytes as decoded
        // plus the f32 copy a model reads), checked before the rest is decoded.
        for (i, file) in listed.into_iter().enumerate() {
            let d = decode_file(&file)?;
            if i == 0 {
                let (count, values) = (labels.len() as f64, (3 * d.height * d.width) as f64);
                hedge_run::Footprint::new(format!("the image folder '{}'", root.display()), move |_| {
                    count * values * 5.0
                })
                .check()?;
            }
            decoded.push((d, file));
        }
        let (first, first_path) = &decoded[0];
        let (height, width) = (first.height, first.width);
        if let Some((d, path)) = decoded.iter().find(|(d, _)| (d.height, d.width) != (height, width)) {
            return Err(DataError::format(
                path,
                "image folder",
                format!(
                    "is {} x {} pixels but '{}' is {width} x {height}; every image must have one size (resize \
                     them first, e.g. `mogrify -resize {width}x{height}! */*.png`)",
                    d.width,
                    d.height,
                    first_path.display()
                ),
            ));
        }
        let channels = decoded.iter().map(|(d, _)| d.channels).max().unwrap_or(1);
        let mut pixels = Vec::with_capacity(decoded.len() * channels * height * width);
        for (d, _) in &decoded {
            push_planar(d, channels, &mut pixels);
        }
        Ok(ImageSet { source: root.to_path_buf(), channels, height, width, pixels, labels, class_names, names })
    }

    /// Reads an `.npz` with `images` `[N, H, W]` or `[N, C, H, W]` (uint8, or float in [0, 1]) and
    /// integer `labels` `[N]`.
    /// Other arrays in the archive (class names, ids) are ignored.
    pub fn read_npz(path: &Path) -> Result<Self> {
        let members = crate::npy::npz_member_names(path)?;
        Self::from_npz_arrays(crate::npy::read_npz_members(path, &["images", "labels"])?, &members, path)
    }

    /// [`Self::read_npz`] of an archive's bytes (`path` names them in errors; a fuzz target).
    pub fn parse_npz(bytes: Vec<u8>, path: &Path) -> Result<Self> {
        let arrays = crate::npy::parse_npz_members(bytes, path, Some(&["images", "labels"]))?;
        let members: Vec<String> = arrays.iter().map(|(name, _)| name.clone()).collect();
        Self::from_npz_arrays(arrays, &members, path)
    }

    /// `members`: every array the archive holds, for the error that names what it has.
    fn from_npz_arrays(arrays: Vec<(String, NpyArray)>, members: &[String], path: &Path) -> Result<Self> {
        let bad = |what: String| DataError::format(path, "image npz", what);
        let arrays: BTreeMap<String, NpyArray> = arrays.into_iter().collect();
        let names = || members.join(", ");
        let images = arrays.get("images").ok_or_else(|| {
            bad(format!(
                "has no array 'images' (it has: {}); save with np.savez(path, images=..., labels=...)",
                names()
            ))
        })?;
        let labels = arrays.get("labels").ok_or_else(|| {
            bad(format!(
                "has no array 'labels' (it has: {}); save with np.savez(path, images=..., labels=...)",
                names()
            ))
        })?;
        let (n, channels, height, width) = match images.shape.as_slice() {
            &[n, h, w] => (n, 1, h, w),
            &[n, c, h, w] if c == 1 || c == 3 => (n, c, h, w),
            &[_, c, _, _] => {
                return Err(bad(format!(
                    "'images' has {c} channels (shape {:?}); expected 1 or 3 in [N, C, H, W] order (transpose an \
                     [N, H, W, C] array with images.transpose(0, 3, 1, 2))",
                    images.shape
                )))
            }
            other => return Err(bad(format!("'images' has shape {other:?}; expected [N, H, W] or [N, C, H, W]"))),
        };
        check_side(height, width, path)?;
        let label_values: Vec<i64> = match &labels.data {
            NpyData::U8(v) => v.iter().map(|&x| x as i64).collect(),
            NpyData::I32(v) => v.iter().map(|&x| x as i64).collect(),
            NpyData::I64(v) => v.clone(),
            _ => return Err(bad("'labels' must hold integers (uint8, int32 or int64)".into())),
        };
        if labels.shape.len() != 1 || label_values.len() != n {
            return Err(bad(format!(
                "'labels' has shape {:?} but 'images' holds {n} images; expected labels of shape [{n}]",
                labels.shape
            )));
        }
        let pixels: Vec<f32> = match &images.data {
            NpyData::U8(v) => v.iter().map(|&x| x as f32 / 255.0).collect(),
            NpyData::F32(v) => v.clone(),
            NpyData::F64(v) => v.iter().map(|&x| x as f32).collect(),
            _ => return Err(bad("'images' must be uint8 (0-255) or float (0-1)".into())),
        };
        if let Some(i) = pixels.iter().position(|p| !(0.0..=1.0).contains(p)) {
            return Err(bad(format!(
                "'images' pixel {i} (image {}) is {}; float images must lie in [0, 1] (divide uint8 values by 255)",
                i / (channels * height * width),
                pixels[i]
            )));
        }
        let mut distinct = label_values.clone();
        distinct.sort_unstable();
        distinct.dedup();
        let index: BTreeMap<i64, u32> = distinct.iter().enumerate().map(|(i, &v)| (v, i as u32)).collect();
        let set = ImageSet {
            source: path.to_path_buf(),
            channels,
            height,
            width,
            pixels,
            labels: label_values.iter().map(|v| index[v]).collect(),
            class_names: distinct.iter().map(i64::to_string).collect(),
            names: (0..label_values.len()).map(|i| format!("#{i}")).collect(),
        };
        set.check_class_sizes()?;
        Ok(set)
    }

    fn check_class_sizes(&self) -> Result<()> {
        let counts = self.class_counts();
        if counts.len() < 2 {
            return Err(DataError::format(
                &self.source,
                "image data",
                "holds one class; verification and identification need at least two",
            ));
        }
        if let Some(c) = counts.iter().position(|&k| k < MIN_PER_CLASS) {
            return Err(DataError::format(
                &self.source,
                "image data",
                format!(
                    "class '{}' has {} image(s); every class needs at least {MIN_PER_CLASS} (a matching pair)",
                    self.class_names[c], counts[c]
                ),
            ));
        }
        Ok(())
    }

    /// Images per class, indexed by label.
    pub fn class_counts(&self) -> Vec<usize> {
        let mut counts = vec![0; self.class_names.len()];
        self.labels.iter().for_each(|&l| counts[l as usize] += 1);
        counts
    }

    pub fn len(&self) -> usize {
        self.labels.len()
    }

    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// Values of one image (`C * H * W`).
    pub fn image_len(&self) -> usize {
        self.channels * self.height * self.width
    }

    /// Image `i`.
    ///
    /// # Shapes
    /// returns `[C * H * W]`, channel-major.
    pub fn image(&self, i: usize) -> &[f32] {
        let len = self.image_len();
        &self.pixels[i * len..(i + 1) * len]
    }

    /// The images at `indices`, in that order, keeping every class name (labels unchanged).
    pub fn subset(&self, indices: &[usize]) -> ImageSet {
        ImageSet {
            source: self.source.clone(),
            channels: self.channels,
            height: self.height,
            width: self.width,
            pixels: indices.iter().flat_map(|&i| self.image(i).iter().copied()).collect(),
            labels: indices.iter().map(|&i| self.labels[i]).collect(),
            class_names: self.class_names.clone(),
            names: indices.iter().map(|&i| self.names[i].clone()).collect(),
        }
    }

    /// Holds `unseen` whole classes out (chosen with `seed`): `(seen, unseen)`, the protocol of
    /// N-digit MNIST's `test_unseen` (identities never seen in training).
    ///
    /// # Errors
    /// `unseen` of 0, or one leaving fewer than two classes on either side.
    pub fn split_classes(&self, unseen: usize, seed: u64) -> Result<(ImageSet, ImageSet)> {
        let classes = self.class_names.len();
        if unseen < 2 || classes < unseen + 2 {
            return Err(DataError::invalid(
                "unseen_classes",
                unseen,
                format!("the set has {classes} classes; hold out at least 2 and leave at least 2 to train on"),
            ));
        }
        let mut order: Vec<u32> = (0..classes as u32).collect();
        order.shuffle(&mut ChaCha8Rng::seed_from_u64(seed));
        let held: Vec<bool> = {
            let mut h = vec![false; classes];
            order[..unseen].iter().for_each(|&c| h[c as usize] = true);
            h
        };
        let (seen_rows, unseen_rows): (Vec<usize>, Vec<usize>) =
            (0..self.len()).partition(|&i| !held[self.labels[i] as usize]);
        Ok((self.subset(&seen_rows), self.subset(&unseen_rows)))
    }

    /// Splits every class's images (shuffled with `seed`) into `(rest, held)`, `fraction` of each
    /// class held (at least one image, and at least one left), for a seen-class test set.
    pub fn split_images(&self, fraction: f64, seed: u64) -> Result<(ImageSet, ImageSet)> {
        if !(fraction > 0.0 && fraction < 1.0) {
            return Err(DataError::invalid("fraction", fraction, "must lie strictly between 0 and 1"));
        }
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut by_class: Vec<Vec<usize>> = vec![Vec::new(); self.class_names.len()];
        (0..self.len()).for_each(|i| by_class[self.labels[i] as usize].push(i));
        let (mut rest, mut held) = (Vec::new(), Vec::new());
        for mut rows in by_class.into_iter().filter(|r| !r.is_empty()) {
            rows.shuffle(&mut rng);
            let k = ((rows.len() as f64 * fraction).round() as usize).clamp(1, rows.len().saturating_sub(1).max(1));
            held.extend_from_slice(&rows[..k]);
            rest.extend_from_slice(&rows[k..]);
        }
        rest.sort_unstable();
        held.sort_unstable();
        Ok((self.subset(&rest), self.subset(&held)))
    }
}

fn check_side(height: usize, width: usize, path: &Path) -> Result<()> {
    if height < 4 || width < 4 || height > MAX_SIDE || width > MAX_SIDE {
        return Err(DataError::format(
            path,
            "image data",
            format!("images of {width} x {height} pixels; each side must lie in 4..={MAX_SIDE} (resize them first)"),
        ));
    }
    Ok(())
}

/// Appends one decoded image as `[channels, H, W]` in [0, 1], widening grey to RGB if asked.
fn push_planar(d: &Decoded, channels: usize, out: &mut Vec<f32>) {
    let plane = d.height * d.width;
    for c in 0..channels {
        let src = if d.channels == 1 { 0 } else { c };
        out.extend((0..plane).map(|p| d.interleaved[p * d.channels + src] as f32 / 255.0));
    }
}

fn decode_file(path: &Path) -> Result<Decoded> {
    let bytes = std::fs::read(path).map_err(|e| DataError::io(path, e))?;
    let is_png = bytes.starts_with(b"\x89PNG\r\n\x1a\n");
    let is_jpeg = bytes.starts_with(&[0xFF, 0xD8]);
    let named_png = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("png"));
    if !is_png && !is_jpeg {
        let (format, signature) =
            if named_png { ("PNG", "the PNG signature") } else { ("JPEG", "a JPEG start marker") };
        return Err(DataError::format(
            path,
            format,
            format!(
                "does not begin with {signature} ({} bytes); it is empty, cut short or another kind of file: \
                 replace it with a PNG or JPEG image, or remove it",
                bytes.len()
            ),
        ));
    }
    let d = if is_png { decode_png(&bytes, path)? } else { decode_jpeg(&bytes, path)? };
    check_side(d.height, d.width, path)?;
    Ok(d)
}

pub(crate) fn decode_png(bytes: &[u8], path: &Path) -> Result<Decoded> {
    let bad = |e: &dyn std::fmt::Display| DataError::format(path, "PNG", e.to_string());
    let mut decoder = png::Decoder::new_with_limits(bytes, png::Limits { bytes: MAX_SIDE * MAX_SIDE * 8 });
    // Palettes expanded, 16-bit reduced to 8: every PNG arrives as 8-bit grey or colour.
    decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = decoder.read_info().map_err(|e| bad(&e))?;
    // The header's sides are checked before the buffer they size is taken.
    check_side(reader.info().height as usize, reader.info().width as usize, path)?;
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).map_err(|e| bad(&e))?;
    let (width, height) = (info.width as usize, info.height as usize);
    buf.truncate(info.buffer_size());
    let (source_channels, keep) = match info.color_type {
        png::ColorType::Grayscale => (1, 1),
        png::ColorType::GrayscaleAlpha => (2, 1),
        png::ColorType::Rgb => (3, 3),
        png::ColorType::Rgba => (4, 3),
        png::ColorType::Indexed => return Err(bad(&"an indexed PNG that did not expand")),
    };
    // Alpha is dropped (images are embedded as they look on black).
    let interleaved = if source_channels == keep {
        buf
    } else {
        buf.chunks_exact(source_channels).flat_map(|p| p[..keep].to_vec()).collect()
    };
    Ok(Decoded { channels: keep, height, width, interleaved })
}

fn decode_jpeg(bytes: &[u8], path: &Path) -> Result<Decoded> {
    let bad = |what: String| DataError::format(path, "JPEG", what);
    let mut decoder = jpeg_decoder::Decoder::new(bytes);
    decoder.read_info().map_err(|e| bad(format!("{e} (hedge reads PNG and JPEG images)")))?;
    let info = decoder.info().ok_or_else(|| bad("no image header".into()))?;
    let (width, height) = (usize::from(info.width), usize::from(info.height));
    check_side(height, width, path)?;
    decoder.set_max_decoding_buffer_size(MAX_SIDE * MAX_SIDE * 4);
    let pixels = decoder.decode().map_err(|e| bad(e.to_string()))?;
    let channels = match info.pixel_format {
        jpeg_decoder::PixelFormat::L8 => 1,
        jpeg_decoder::PixelFormat::RGB24 => 3,
        other => return Err(bad(format!("pixel format {other:?}; expected RGB or greyscale"))),
    };
    if pixels.len() != width * height * channels {
        return Err(bad(format!("decoded {} values for {width} x {height} x {channels}", pixels.len())));
    }
    Ok(Decoded { channels, height, width, interleaved: pixels })
}

/// Writes `pixels` (`[H, W]` grey or `[H, W, 3]` RGB, interleaved) as an 8-bit PNG (tests and
/// exports of image folders).
pub fn write_png(path: &Path, width: usize, height: usize, channels: usize, pixels: &[u8]) -> Result<()> {
    let bytes = png_bytes(width, height, channels, pixels).map_err(|e| match e {
        DataError::Write { source, .. } => DataError::write(path, source),
        other => other,
    })?;
    Ok(hedge_run::write_atomic(path, &bytes)?)
}

/// [`write_png`]'s file contents.
pub(crate) fn png_bytes(width: usize, height: usize, channels: usize, pixels: &[u8]) -> Result<Vec<u8>> {
    let colour = match channels {
        1 => png::ColorType::Grayscale,
        3 => png::ColorType::Rgb,
        _ => return Err(DataError::invalid("channels", channels, "PNG export takes 1 or 3 channels")),
    };
    let encoding = |e: png::EncodingError| DataError::write("PNG in memory", std::io::Error::other(e));
    let mut bytes = Vec::new();
    {
        let mut encoder = png::Encoder::new(&mut bytes, width as u32, height as u32);
        encoder.set_color(colour);
        encoder.set_depth(png::BitDepth::Eight);
        let mut writer = encoder.write_header().map_err(encoding)?;
        writer.write_image_data(pixels).map_err(encoding)?;
    }
    Ok(bytes)
}

/// Which images of an MNIST-layout split [`export_folder`] writes.
#[derive(Debug, Clone, Default)]
pub struct ExportSelection {
    /// Images per class.
    pub count_per_class: usize,
    /// Images of each class passed over first (in file order), so that two exports with
    /// different offsets never share an image (e.g. a validation and a probe set).
    pub skip_per_class: usize,
    /// Class names to write (empty: every class).
    pub classes: Vec<String>,
}

/// The kind of folder [`export_folder`] writes (its ownership marker).
pub const IMAGE_EXPORT_KIND: &str = "image export";

/// Writes images of an MNIST-layout split (MNIST, Fashion-MNIST) as
/// `out/<class name>/<index>.png`, 28 x 28 grey: an image folder in the layout
/// [`ImageSet::read_folder`] takes, to try `--data` on or to see the layout. Of each chosen
/// class, `selection.skip_per_class` images are passed over and the next
/// `selection.count_per_class` written, in file order; `names` names the classes by label (e.g.
/// Fashion-MNIST's "t-shirt", "trouser", ...). Returns `(class name, images written)` per class.
///
/// # Errors
/// `out` holding files already (nothing is overwritten); an unknown class name; a class with
/// fewer images than asked for; a write failure.
pub fn export_folder(
    split: &crate::MnistSplit,
    names: &[&str],
    selection: &ExportSelection,
    out: &Path,
) -> Result<Vec<(String, usize)>> {
    hedge_run::atomic::check_output_dir(out, IMAGE_EXPORT_KIND, false)?;
    let classes = split.labels.iter().map(|&l| l as usize + 1).max().unwrap_or(0);
    if names.len() < classes {
        return Err(DataError::invalid("names", names.len(), format!("the split has {classes} classes; name each")));
    }
    let mut chosen = vec![selection.classes.is_empty(); classes];
    for class in &selection.classes {
        let Some(c) = names[..classes].iter().position(|n| n == class) else {
            return Err(DataError::invalid(
                "classes",
                class,
                format!("not a class of this set; the classes are {}", names[..classes].join(", ")),
            ));
        };
        chosen[c] = true;
    }
    // Counted before anything is written: a class without enough images is refused up front,
    // not after a folder of partial exports.
    let mut available = vec![0usize; classes];
    for &label in &split.labels {
        available[label as usize] += 1;
    }
    if selection.count_per_class == 0 {
        return Err(DataError::invalid("--per-class", 0, "export at least one image per class"));
    }
    if let Some(c) = (0..classes)
        .find(|&c| chosen[c] && available[c].saturating_sub(selection.skip_per_class) < selection.count_per_class)
    {
        return Err(DataError::invalid(
            "--per-class",
            selection.count_per_class,
            format!(
                "class '{}' has {} images, {} after the {} skipped; ask for at most that many per class",
                names[c],
                available[c],
                available[c].saturating_sub(selection.skip_per_class),
                selection.skip_per_class
            ),
        ));
    }
    // Marked as hedge's export (the marker is a dot file, which reading the folder skips).
    hedge_run::atomic::prepare_output_dir(out, IMAGE_EXPORT_KIND, false)?;
    let mut seen = vec![0usize; classes];
    let mut written = vec![0usize; classes];
    for (i, &label) in split.labels.iter().enumerate() {
        let c = label as usize;
        if !chosen[c] || written[c] == selection.count_per_class {
            continue;
        }
        seen[c] += 1;
        if seen[c] <= selection.skip_per_class {
            continue;
        }
        let dir = out.join(names[c]);
        std::fs::create_dir_all(&dir).map_err(|e| DataError::write(&dir, e))?;
        let side = crate::mnist::DIGIT_SIDE;
        write_png(&dir.join(format!("{i:05}.png")), side, side, 1, split.image(i))?;
        written[c] += 1;
    }
    Ok((0..classes).filter(|&c| chosen[c]).map(|c| (names[c].to_string(), written[c])).collect())
}

/// Fashion-MNIST's class names, by label (Xiao et al. 2017).
pub const FASHION_MNIST_CLASSES: [&str; 10] =
    ["t-shirt", "trouser", "pullover", "dress", "coat", "sandal", "shirt", "sneaker", "bag", "ankle-boot"];

/// MNIST's class names, by label.
pub const MNIST_CLASSES: [&str; 10] = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::npy::write_npz;

    fn folder_with(classes: &[(&str, usize)], side: usize, channels: usize) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (c, &(name, count)) in classes.iter().enumerate() {
            std::fs::create_dir_all(dir.path().join(name)).unwrap();
            for i in 0..count {
                let value = (c * 40 + i) as u8;
                let pixels = vec![value; side * side * channels];
                write_png(&dir.path().join(name).join(format!("{i}.png")), side, side, channels, &pixels).unwrap();
            }
        }
        dir
    }

    #[test]
    fn an_image_folder_reads_classes_in_sorted_order_with_pixels_in_unit_range() {
        let dir = folder_with(&[("zebra", 2), ("ant", 3)], 8, 1);
        std::fs::write(dir.path().join("ant").join("notes.txt"), "ignored").unwrap();
        let set = ImageSet::read(dir.path()).unwrap();
        assert_eq!(set.class_names, ["ant", "zebra"]);
        assert_eq!((set.len(), set.channels, set.height, set.width), (5, 1, 8, 8));
        assert_eq!(set.labels, [0, 0, 0, 1, 1]);
        // "ant" is class index 1 in creation order: pixel value 40 + i.
        assert_eq!(set.image(1)[0], 41.0 / 255.0);
        assert_eq!(set.image(3)[7], 0.0);
    }

    #[test]
    fn a_folder_mixing_grey_and_colour_is_read_as_colour() {
        let dir = folder_with(&[("a", 2)], 6, 1);
        std::fs::create_dir_all(dir.path().join("b")).unwrap();
        let rgb: Vec<u8> = (0..6 * 6).flat_map(|_| [10u8, 20, 30]).collect();
        for i in 0..2 {
            write_png(&dir.path().join("b").join(format!("{i}.png")), 6, 6, 3, &rgb).unwrap();
        }
        let set = ImageSet::read(dir.path()).unwrap();
        assert_eq!(set.channels, 3);
        let b = set.image(2);
        assert_eq!((b[0], b[36], b[72]), (10.0 / 255.0, 20.0 / 255.0, 30.0 / 255.0), "planar channels");
        let a = set.image(0);
        assert_eq!((a[0], a[36], a[72]), (0.0, 0.0, 0.0), "grey widened to three equal planes");
    }

    #[test]
    fn bad_folders_are_refused_naming_the_file_and_the_fix() {
        let dir = folder_with(&[("a", 2), ("b", 2)], 8, 1);
        write_png(&dir.path().join("b").join("big.png"), 9, 8, 1, &[0; 72]).unwrap();
        let err = ImageSet::read(dir.path()).unwrap_err().to_string();
        assert!(err.contains("big.png") && err.contains("one size") && err.contains("mogrify"), "{err}");

        let dir = folder_with(&[("a", 2), ("b", 1)], 8, 1);
        let err = ImageSet::read(dir.path()).unwrap_err().to_string();
        assert!(err.contains("class 'b' has 1") && err.contains("at least 2"), "{err}");

        let dir = folder_with(&[("a", 2)], 8, 1);
        std::fs::write(dir.path().join("a").join("2.png"), b"\x89PNG\r\n\x1a\ntruncated").unwrap();
        let err = ImageSet::read(dir.path()).unwrap_err().to_string();
        assert!(err.contains("2.png") && err.contains("PNG"), "{err}");

        let empty = tempfile::tempdir().unwrap();
        let err = ImageSet::read(empty.path()).unwrap_err().to_string();
        assert!(err.contains("no class sub-folders"), "{err}");
        let err = ImageSet::read(&empty.path().join("nope")).unwrap_err().to_string();
        assert!(err.contains("no such image folder"), "{err}");
    }

    #[test]
    fn an_npz_reads_both_layouts_and_refuses_mismatches() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("set.npz");
        let images = NpyArray::new(vec![4, 5, 5], NpyData::U8((0..100).map(|v| v as u8).collect()));
        let labels = NpyArray::new(vec![4], NpyData::I64(vec![7, 3, 7, 3]));
        write_npz(&path, &[("images", images), ("labels", labels.clone())]).unwrap();
        let set = ImageSet::read(&path).unwrap();
        assert_eq!((set.channels, set.height, set.width), (1, 5, 5));
        assert_eq!(set.class_names, ["3", "7"]);
        assert_eq!(set.labels, [1, 0, 1, 0]);
        assert_eq!(set.image(1)[0], 25.0 / 255.0);

        let chw = NpyArray::new(vec![4, 3, 4, 4], NpyData::F32(vec![0.5; 4 * 48]));
        write_npz(&path, &[("images", chw), ("labels", labels.clone())]).unwrap();
        assert_eq!(ImageSet::read(&path).unwrap().channels, 3);

        let cases = [
            (NpyArray::new(vec![4, 5, 5, 3], NpyData::U8(vec![0; 300])), labels.clone(), "transpose"),
            (NpyArray::new(vec![4, 4, 4], NpyData::F32(vec![2.0; 64])), labels.clone(), "must lie in [0, 1]"),
            (
                NpyArray::new(vec![4, 4, 4], NpyData::U8(vec![0; 64])),
                NpyArray::new(vec![3], NpyData::I64(vec![0, 1, 1])),
                "expected labels of shape [4]",
            ),
            (
                NpyArray::new(vec![4, 4, 4], NpyData::U8(vec![0; 64])),
                NpyArray::new(vec![4], NpyData::I64(vec![0, 1, 1, 1])),
                "class '0' has 1 image",
            ),
        ];
        for (images, labels, expected) in cases {
            write_npz(&path, &[("images", images), ("labels", labels)]).unwrap();
            let err = ImageSet::read(&path).unwrap_err().to_string();
            assert!(err.contains(expected) && err.contains("set.npz"), "{expected}: {err}");
        }
        write_npz(&path, &[("x", NpyArray::new(vec![1], NpyData::U8(vec![0])))]).unwrap();
        let err = ImageSet::read(&path).unwrap_err().to_string();
        assert!(err.contains("no array 'images' (it has: x)"), "{err}");
        // An extra array hedge does not read (class names as strings, dtype '<U5', which
        // `np.savez(path, images=..., labels=..., class_names=np.array(['shirt', 'dress']))`
        // writes) is ignored, not refused.
        let images = NpyArray::new(vec![4, 4, 4], NpyData::U8(vec![7; 64]));
        let labels = NpyArray::new(vec![4], NpyData::I64(vec![0, 0, 1, 1]));
        let mut bytes = crate::npy::npz_bytes(&[("images", images), ("labels", labels)]).unwrap();
        let mut strings = b"\x93NUMPY\x01\x00".to_vec();
        let header = "{'descr': '<U5', 'fortran_order': False, 'shape': (2,), }";
        let padded = format!("{header:<117}\n");
        strings.extend_from_slice(&(padded.len() as u16).to_le_bytes());
        strings.extend_from_slice(padded.as_bytes());
        for name in ["shirt", "dress"] {
            strings.extend(name.chars().flat_map(|c| (c as u32).to_le_bytes()));
        }
        {
            let mut archive = zip::ZipWriter::new_append(std::io::Cursor::new(&mut bytes)).unwrap();
            archive.start_file("class_names.npy", zip::write::SimpleFileOptions::default()).unwrap();
            std::io::Write::write_all(&mut archive, &strings).unwrap();
            archive.finish().unwrap();
        }
        std::fs::write(&path, &bytes).unwrap();
        let set = ImageSet::read(&path).unwrap();
        assert_eq!((set.len(), set.class_names.len()), (4, 2));
    }

    #[test]
    fn a_users_images_render_as_stored_and_small_classes_are_named() {
        use crate::{Corruption, ImageDataset, NDigitSplit};
        let set = ImageSet {
            source: "mem".into(),
            channels: 2,
            height: 4,
            width: 5,
            pixels: (1..=6 * 40).map(|v| v as f32 / 240.0).collect(),
            labels: vec![0, 0, 0, 0, 1, 1],
            class_names: vec!["a".into(), "b".into()],
            names: (0..6).map(|i| format!("#{i}")).collect(),
        };
        let data = ImageDataset::from_images(set.clone(), NDigitSplit::Train);
        assert_eq!((data.shape(), data.image_len(), data.digits), ([2, 4, 5], 40, 1));
        let mut rng = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(0);
        assert_eq!(data.render_batch(&[5], &Corruption::Clean, &mut rng), set.image(5));
        // Not made of digits: no pool to recompose from, and a recomposed batch is the images.
        assert!(matches!(
            data.digit_pool(),
            Err(crate::DataError::Run(hedge_run::RunError::InvalidConfig { field: "recompose", .. }))
        ));
        let no_pool = crate::DigitPool { by_digit: Default::default() };
        assert_eq!(data.render_recomposed_batch(&[5], &no_pool, &Corruption::Clean, &mut rng), set.image(5));
        // Nor are there new digits to validate on.
        assert!(matches!(
            data.unused_digits(),
            Err(crate::DataError::Run(hedge_run::RunError::InvalidConfig { field: "validation_digits", .. }))
        ));
        assert!(matches!(
            data.with_digits_redrawn(&no_pool, &mut rng),
            Err(crate::DataError::Run(hedge_run::RunError::InvalidConfig { field: "validation_digits", .. }))
        ));
        // Every stored pixel is > 0, so zeros are the occlusion: the same square in both planes.
        let mut occluded = 0;
        for index in 0..6 {
            let corrupt = data.render_batch(&[index], &Corruption::Corrupt { seed: 3 }, &mut rng);
            let (a, b) = corrupt.split_at(20);
            assert!(a.iter().zip(b).all(|(x, y)| (*x == 0.0) == (*y == 0.0)), "image {index}");
            occluded += usize::from(a.contains(&0.0));
        }
        assert!(occluded > 0, "some square has a side of at least 1");
        assert_eq!(data.classes_smaller_than(4), [1]);
        assert!(data.subset(&[0, 1, 2, 3]).classes_smaller_than(4).is_empty());
        // The evaluation subsets (`--per-class N`): the first N of each class in file order; a
        // class with fewer keeps all of its images.
        assert_eq!(data.first_per_class(3), [0, 1, 2, 4, 5]);
        assert_eq!(data.first_per_class(1), [0, 4]);
        assert_eq!(data.first_per_class(0), Vec::<usize>::new());
    }

    #[test]
    fn class_and_image_splits_partition_the_set() {
        let dir = folder_with(&[("a", 4), ("b", 4), ("c", 4), ("d", 4), ("e", 4)], 4, 1);
        let set = ImageSet::read(dir.path()).unwrap();
        let (seen, unseen) = set.split_classes(2, 3).unwrap();
        assert_eq!((seen.len(), unseen.len()), (12, 8));
        let seen_classes: std::collections::BTreeSet<u32> = seen.labels.iter().copied().collect();
        assert!(unseen.labels.iter().all(|l| !seen_classes.contains(l)), "no class on both sides");
        assert_eq!(set.split_classes(2, 3).unwrap(), (seen.clone(), unseen), "seeded");
        let (rest, held) = seen.split_images(0.25, 0).unwrap();
        assert_eq!((rest.len(), held.len()), (9, 3), "one image of each of the 3 classes held");
        assert!(set.split_classes(4, 0).is_err(), "5 classes cannot hold out 4 and keep 2");
    }
}
