//! The IDX format of MNIST (raw or gzipped).
//!
//! Layout: two zero bytes, a type byte (0x08 = unsigned byte, the only type MNIST uses), a byte
//! with the number of dimensions, then one big-endian u32 per dimension, then the payload.

use std::io::Read;
use std::path::Path;

use crate::datadir::read_bytes;
use crate::{DataError, FormatIssue, Result};

/// Magic number of an IDX file of unsigned bytes with one dimension (labels).
pub const LABELS_MAGIC: u32 = 0x0000_0801;
/// Magic number of an IDX file of unsigned bytes with three dimensions (images).
pub const IMAGES_MAGIC: u32 = 0x0000_0803;

/// An IDX array of unsigned bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdxArray {
    pub dims: Vec<usize>,
    pub data: Vec<u8>,
}

/// Reads an IDX file, decompressing it first when it starts with the gzip magic bytes.
///
/// # Errors
/// A [`DataError::Format`] naming the file when the gzip stream is broken, the magic number is
/// not `expected_magic`, or the payload length disagrees with the header.
pub fn read_idx(path: &Path, expected_magic: u32) -> Result<IdxArray> {
    parse_idx_file(read_bytes(path)?, path, expected_magic)
}

/// The most bytes a gzipped IDX file may inflate to: MNIST's largest is 47 MB; a crafted
/// stream can inflate a thousandfold.
pub const MAX_IDX_BYTES: u64 = 1 << 30;

/// [`read_idx`] on a file's bytes already read (`path` names them in errors; the fuzz targets'
/// entry).
pub(crate) fn parse_idx_file(raw: Vec<u8>, path: &Path, expected_magic: u32) -> Result<IdxArray> {
    let bytes = if raw.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::with_capacity(raw.len() * 4);
        flate2::read::GzDecoder::new(&raw[..]).take(MAX_IDX_BYTES + 1).read_to_end(&mut out).map_err(|e| {
            DataError::format(path, "gzip", format!("{e} (the download may be truncated; fetch the file again)"))
        })?;
        if out.len() as u64 > MAX_IDX_BYTES {
            return Err(DataError::format(
                path,
                "gzip",
                format!(
                    "inflates past {} MiB, hedge's limit for an IDX file (MNIST's largest is 47 MB)",
                    MAX_IDX_BYTES >> 20
                ),
            ));
        }
        out
    } else {
        raw
    };
    parse_idx(&bytes, expected_magic).map_err(|what| DataError::format(path, "IDX", what))
}

/// Parses IDX bytes; the error is a sentence without the file name.
pub fn parse_idx(bytes: &[u8], expected_magic: u32) -> std::result::Result<IdxArray, FormatIssue> {
    if bytes.len() < 4 {
        return Err(FormatIssue(format!("{} bytes is too short for the 4-byte magic number", bytes.len())));
    }
    let magic = u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    if magic != expected_magic {
        return Err(FormatIssue(format!(
            "magic number is {magic} (0x{magic:08x}), expected {expected_magic} (0x{expected_magic:08x}); \
             is this the right file (images have 2051, labels 2049)?"
        )));
    }
    let ndim = bytes[3] as usize;
    let header = 4 + 4 * ndim;
    if bytes.len() < header {
        return Err(FormatIssue(format!("file ends after {} bytes, inside the {header}-byte header", bytes.len())));
    }
    let dims: Vec<usize> = (0..ndim)
        .map(|i| {
            let o = 4 + 4 * i;
            u32::from_be_bytes([bytes[o], bytes[o + 1], bytes[o + 2], bytes[o + 3]]) as usize
        })
        .collect();
    // Checked: (2^31, 2^31, 4) wraps to 0 and would "match" an empty payload.
    let expected = dims.iter().try_fold(1usize, |n, &d| n.checked_mul(d)).ok_or_else(|| {
        FormatIssue(format!(
            "header says dimensions {dims:?}, more bytes than this machine can address; the header is damaged"
        ))
    })?;
    let payload = bytes.len() - header;
    if payload != expected {
        return Err(FormatIssue(format!(
            "header says dimensions {dims:?} ({expected} bytes of data) but the file holds {payload}; \
             the file is {}",
            if payload < expected { "truncated" } else { "longer than its header says" }
        )));
    }
    Ok(IdxArray { dims, data: bytes[header..].to_vec() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn idx_bytes(magic: u32, dims: &[u32], payload: &[u8]) -> Vec<u8> {
        let mut b = magic.to_be_bytes().to_vec();
        for d in dims {
            b.extend_from_slice(&d.to_be_bytes());
        }
        b.extend_from_slice(payload);
        b
    }

    #[test]
    fn parses_a_good_image_file() {
        let payload: Vec<u8> = (0..2 * 3 * 4).map(|i| i as u8).collect();
        let a = parse_idx(&idx_bytes(IMAGES_MAGIC, &[2, 3, 4], &payload), IMAGES_MAGIC).unwrap();
        assert_eq!(a.dims, vec![2, 3, 4]);
        assert_eq!(a.data, payload);
    }

    #[test]
    fn rejects_wrong_magic() {
        let err = parse_idx(&idx_bytes(LABELS_MAGIC, &[3], &[1, 2, 3]), IMAGES_MAGIC).unwrap_err();
        assert!(err.0.contains("magic number is 2049"), "{err}");
        assert!(err.0.contains("expected 2051"), "{err}");
    }

    #[test]
    fn rejects_truncated_payload_and_header() {
        let err = parse_idx(&idx_bytes(LABELS_MAGIC, &[5], &[1, 2, 3]), LABELS_MAGIC).unwrap_err();
        assert!(err.0.contains("truncated"), "{err}");
        let mut short = idx_bytes(IMAGES_MAGIC, &[2, 3, 4], &[]);
        short.truncate(9);
        let err = parse_idx(&short, IMAGES_MAGIC).unwrap_err();
        assert!(err.0.contains("inside the 16-byte header"), "{err}");
        let err = parse_idx(&[0, 0], IMAGES_MAGIC).unwrap_err();
        assert!(err.0.contains("too short"), "{err}");
    }

    #[test]
    fn rejects_extra_bytes() {
        let err = parse_idx(&idx_bytes(LABELS_MAGIC, &[2], &[1, 2, 3]), LABELS_MAGIC).unwrap_err();
        assert!(err.0.contains("longer than its header"), "{err}");
    }

    #[test]
    fn reads_gzip_and_names_the_file_on_error() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("labels.gz");
        let bytes = idx_bytes(LABELS_MAGIC, &[4], &[7, 1, 2, 9]);
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(&bytes).unwrap();
        let gz = enc.finish().unwrap();
        std::fs::write(&good, &gz).unwrap();
        assert_eq!(read_idx(&good, LABELS_MAGIC).unwrap().data, vec![7, 1, 2, 9]);

        let cut = dir.path().join("cut.gz");
        std::fs::write(&cut, &gz[..gz.len() - 6]).unwrap();
        let msg = read_idx(&cut, LABELS_MAGIC).unwrap_err().to_string();
        assert!(msg.contains("cut.gz"), "{msg}");
    }
}
