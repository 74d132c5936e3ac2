//! NumPy `.npy` / `.npz` reading (the N-digit MNIST tables) and writing (embeddings that
//! `numpy.load` opens).

use std::io::{Read, Write};
use std::path::Path;

use crate::atomic::write_atomic;
use crate::datadir::read_bytes;
use crate::{DataError, FormatIssue, Result};

/// The element data of an array, in the type it was stored with.
#[derive(Debug, Clone, PartialEq)]
pub enum NpyData {
    U8(Vec<u8>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
}

impl NpyData {
    fn descr(&self) -> &'static str {
        match self {
            NpyData::U8(_) => "|u1",
            NpyData::I32(_) => "<i4",
            NpyData::I64(_) => "<i8",
            NpyData::F32(_) => "<f4",
            NpyData::F64(_) => "<f8",
        }
    }

    fn len(&self) -> usize {
        match self {
            NpyData::U8(v) => v.len(),
            NpyData::I32(v) => v.len(),
            NpyData::I64(v) => v.len(),
            NpyData::F32(v) => v.len(),
            NpyData::F64(v) => v.len(),
        }
    }

    fn write_le(&self, out: &mut Vec<u8>) {
        match self {
            NpyData::U8(v) => out.extend_from_slice(v),
            NpyData::I32(v) => v.iter().for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
            NpyData::I64(v) => v.iter().for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
            NpyData::F32(v) => v.iter().for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
            NpyData::F64(v) => v.iter().for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
        }
    }
}

/// A C-ordered n-dimensional array as stored in an `.npy` file.
#[derive(Debug, Clone, PartialEq)]
pub struct NpyArray {
    pub shape: Vec<usize>,
    pub data: NpyData,
}

impl NpyArray {
    pub fn new(shape: Vec<usize>, data: NpyData) -> Self {
        debug_assert_eq!(shape.iter().product::<usize>(), data.len());
        NpyArray { shape, data }
    }

    /// The elements as i64, or an error naming `what` when they are stored as another type.
    pub fn as_i64(&self) -> std::result::Result<&[i64], FormatIssue> {
        match &self.data {
            NpyData::I64(v) => Ok(v),
            other => Err(FormatIssue(format!("expected little-endian int64 ('<i8'), found '{}'", other.descr()))),
        }
    }

    /// Encodes the array as `.npy` (format version 1.0).
    pub fn to_npy_bytes(&self) -> Vec<u8> {
        let shape = match self.shape.len() {
            0 => "()".to_string(),
            1 => format!("({},)", self.shape[0]),
            _ => format!("({})", self.shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")),
        };
        let mut header = format!("{{'descr': '{}', 'fortran_order': False, 'shape': {shape}, }}", self.data.descr());
        // The total header (magic 6 + version 2 + length 2 + text + newline) is padded to 64.
        let unpadded = 10 + header.len() + 1;
        header.push_str(&" ".repeat((64 - unpadded % 64) % 64));
        header.push('\n');
        let mut out = Vec::with_capacity(10 + header.len() + self.data.len() * 8);
        out.extend_from_slice(b"\x93NUMPY\x01\x00");
        out.extend_from_slice(&(header.len() as u16).to_le_bytes());
        out.extend_from_slice(header.as_bytes());
        self.data.write_le(&mut out);
        out
    }
}

/// Parses `.npy` bytes; the error is a sentence without the file name.
pub fn parse_npy(bytes: &[u8]) -> std::result::Result<NpyArray, FormatIssue> {
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return Err(FormatIssue("does not start with the NumPy magic '\\x93NUMPY'".into()));
    }
    let major = bytes[6];
    let (header_len, start) = match major {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        2 | 3 => {
            if bytes.len() < 12 {
                return Err(FormatIssue("truncated header".into()));
            }
            (u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize, 12)
        }
        v => return Err(FormatIssue(format!("unsupported .npy format version {v}"))),
    };
    let end = start + header_len;
    if bytes.len() < end {
        return Err(FormatIssue(format!("file ends inside its {header_len}-byte header (truncated)")));
    }
    let header = std::str::from_utf8(&bytes[start..end]).map_err(|_| "header is not text".to_string())?;
    let descr = dict_value(header, "descr").ok_or("header has no 'descr'")?;
    let descr = descr.trim().trim_matches(|c| c == '\'' || c == '"');
    let fortran = dict_value(header, "fortran_order").ok_or("header has no 'fortran_order'")?;
    if fortran.trim() != "False" {
        return Err(FormatIssue("Fortran-ordered arrays are not supported; save with np.ascontiguousarray".into()));
    }
    let shape_text = dict_value(header, "shape").ok_or("header has no 'shape'")?;
    let shape: Vec<usize> = shape_text
        .trim()
        .trim_start_matches('(')
        .trim_end_matches(')')
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<usize>().map_err(|_| format!("bad shape entry '{s}'")))
        .collect::<std::result::Result<_, _>>()?;
    let count: usize = shape.iter().product();
    let payload = &bytes[end..];
    let width = match descr {
        "|u1" | "<u1" | "u1" => 1,
        "<i4" | "<f4" => 4,
        "<i8" | "<f8" => 8,
        other => return Err(FormatIssue(format!("unsupported dtype '{other}' (expected <i8, <i4, <f4, <f8 or |u1)"))),
    };
    if payload.len() != count * width {
        return Err(FormatIssue(format!(
            "shape {shape:?} of '{descr}' needs {} bytes of data, found {} ({})",
            count * width,
            payload.len(),
            if payload.len() < count * width { "truncated" } else { "trailing bytes" }
        )));
    }
    let chunks = payload.chunks_exact(width);
    let data = match descr {
        "<i4" => NpyData::I32(chunks.map(|c| i32::from_le_bytes(c.try_into().unwrap())).collect()),
        "<i8" => NpyData::I64(chunks.map(|c| i64::from_le_bytes(c.try_into().unwrap())).collect()),
        "<f4" => NpyData::F32(chunks.map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()),
        "<f8" => NpyData::F64(chunks.map(|c| f64::from_le_bytes(c.try_into().unwrap())).collect()),
        _ => NpyData::U8(payload.to_vec()),
    };
    Ok(NpyArray { shape, data })
}

/// The text after `'key':` in a Python dict literal, up to the next top-level comma.
fn dict_value<'a>(header: &'a str, key: &str) -> Option<&'a str> {
    let pos = header.find(&format!("'{key}'"))?;
    let rest = &header[pos + key.len() + 2..];
    let rest = rest.trim_start().strip_prefix(':')?;
    let mut depth = 0i32;
    for (i, c) in rest.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' | '}' if depth == 0 => return Some(&rest[..i]),
            _ => {}
        }
    }
    None
}

/// Reads every array of an `.npz` archive, in archive order, as `(name, array)`.
///
/// # Errors
/// [`DataError::Format`] naming the file and the member when the archive or an array is broken.
pub fn read_npz(path: &Path) -> Result<Vec<(String, NpyArray)>> {
    let bytes = read_bytes(path)?;
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes))
        .map_err(|e| DataError::format(path, "npz (zip)", format!("{e}; the file may be truncated")))?;
    let mut out = Vec::with_capacity(archive.len());
    for i in 0..archive.len() {
        let mut member =
            archive.by_index(i).map_err(|e| DataError::format(path, "npz (zip)", format!("member {i}: {e}")))?;
        let name = member.name().trim_end_matches(".npy").to_string();
        let mut buf = Vec::with_capacity(member.size() as usize);
        member
            .read_to_end(&mut buf)
            .map_err(|e| DataError::format(path, "npz (zip)", format!("member '{name}': {e}")))?;
        let array =
            parse_npy(&buf).map_err(|what| DataError::format(path, "npy", format!("array '{name}': {what}")))?;
        out.push((name, array));
    }
    Ok(out)
}

/// Writes named arrays as an uncompressed `.npz` that `numpy.load` opens, atomically.
pub fn write_npz(path: &Path, arrays: &[(&str, NpyArray)]) -> Result<()> {
    let mut cursor = std::io::Cursor::new(Vec::new());
    {
        let mut zip = zip::ZipWriter::new(&mut cursor);
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored)
            .large_file(true);
        for (name, array) in arrays {
            zip.start_file(format!("{name}.npy"), options)
                .map_err(|e| DataError::io(path, std::io::Error::other(e)))?;
            zip.write_all(&array.to_npy_bytes()).map_err(|e| DataError::io(path, e))?;
        }
        zip.finish().map_err(|e| DataError::io(path, std::io::Error::other(e)))?;
    }
    write_atomic(path, &cursor.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npy_round_trip_for_every_dtype() {
        let cases = vec![
            NpyArray::new(vec![2, 3], NpyData::F32(vec![1.0, -2.5, 3.0, 0.0, 1e-7, 7.0])),
            NpyArray::new(vec![4], NpyData::I64(vec![-1, 0, 1 << 40, 5])),
            NpyArray::new(vec![], NpyData::I64(vec![1428])),
            NpyArray::new(vec![1, 2, 2], NpyData::U8(vec![0, 255, 7, 9])),
            NpyArray::new(vec![2], NpyData::F64(vec![0.1, 0.2])),
            NpyArray::new(vec![3], NpyData::I32(vec![-3, 2, 1])),
        ];
        for a in cases {
            let bytes = a.to_npy_bytes();
            // Data starts on a 64-byte boundary, as NumPy writes it.
            let header_len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
            assert_eq!((10 + header_len) % 64, 0);
            assert_eq!(parse_npy(&bytes).unwrap(), a);
        }
    }

    /// Bytes written by `np.save(f, np.array([[1, 2], [3, 4]], dtype='<i8'))` with NumPy 1.26.
    #[test]
    fn parses_bytes_written_by_numpy() {
        let mut bytes = b"\x93NUMPY\x01\x00v\x00{'descr': '<i8', 'fortran_order': False, 'shape': (2, 2), }".to_vec();
        while bytes.len() < 127 {
            bytes.push(b' ');
        }
        bytes.push(b'\n');
        for v in [1i64, 2, 3, 4] {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
        let a = parse_npy(&bytes).unwrap();
        assert_eq!(a.shape, vec![2, 2]);
        assert_eq!(a.as_i64().unwrap(), &[1, 2, 3, 4]);
    }

    #[test]
    fn rejects_truncated_and_foreign_npy() {
        let a = NpyArray::new(vec![4], NpyData::I64(vec![1, 2, 3, 4]));
        let bytes = a.to_npy_bytes();
        let err = parse_npy(&bytes[..bytes.len() - 3]).unwrap_err();
        assert!(err.0.contains("truncated"), "{err}");
        assert!(parse_npy(b"PK\x03\x04 not numpy").unwrap_err().0.contains("magic"));
        let f = NpyArray::new(vec![1], NpyData::F32(vec![1.0]));
        assert!(f.as_i64().unwrap_err().0.contains("'<f4'"));
    }

    #[test]
    fn npz_round_trip_and_truncation() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.npz");
        let a = NpyArray::new(vec![2], NpyData::F32(vec![0.5, 1.5]));
        let b = NpyArray::new(vec![3], NpyData::I64(vec![9, 8, 7]));
        write_npz(&path, &[("mean", a.clone()), ("label", b.clone())]).unwrap();
        let back = read_npz(&path).unwrap();
        assert_eq!(back, vec![("mean".to_string(), a), ("label".to_string(), b)]);

        let bytes = std::fs::read(&path).unwrap();
        let cut = dir.path().join("cut.npz");
        std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
        let msg = read_npz(&cut).unwrap_err().to_string();
        assert!(msg.contains("cut.npz"), "{msg}");
    }
}
