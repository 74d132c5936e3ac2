//! NumPy `.npy` / `.npz` reading (the N-digit MNIST tables) and writing (embeddings that
//! `numpy.load` opens).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use crate::datadir::read_bytes;
use crate::{DataError, FormatIssue, Result};
use hedge_run::atomic::write_atomic;

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

/// The largest `.npz` member (in bytes) hedge reads: a larger declared or inflated size is
/// refused before it is allocated. N-digit MNIST's tables are kilobytes; a matrix past this
/// size belongs in an `.npy` file read with [`NpyRowReader`].
pub const MAX_ARRAY_BYTES: usize = 16 << 30;

/// What an `.npy` header says: the element type, the shape and where the data starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NpyHeader {
    /// NumPy's type string, e.g. `<f8`.
    pub descr: String,
    pub shape: Vec<usize>,
    /// Byte offset of the first element.
    pub data_offset: usize,
}

impl NpyHeader {
    /// Bytes per element, or an error for a type hedge does not read.
    fn width(&self) -> std::result::Result<usize, FormatIssue> {
        match self.descr.as_str() {
            "|u1" | "<u1" | "u1" => Ok(1),
            "<i4" | "<f4" => Ok(4),
            "<i8" | "<f8" => Ok(8),
            other => Err(FormatIssue(format!("unsupported dtype '{other}' (expected <i8, <i4, <f4, <f8 or |u1)"))),
        }
    }

    /// Bytes of data the shape needs, with checked arithmetic: a crafted header's
    /// (1, 2^61, 2) must be refused, not wrap around to 0 bytes.
    fn data_bytes(&self) -> std::result::Result<usize, FormatIssue> {
        let width = self.width()?;
        self.shape.iter().try_fold(width, |bytes, &d| bytes.checked_mul(d)).ok_or_else(|| {
            FormatIssue(format!(
                "shape {:?} of '{}' has more bytes than this machine can address; the header is damaged",
                self.shape, self.descr
            ))
        })
    }
}

/// Parses the header at the start of `bytes` (which may stop right after it).
fn parse_npy_header(bytes: &[u8]) -> std::result::Result<NpyHeader, FormatIssue> {
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
    let descr = descr.trim().trim_matches(|c| c == '\'' || c == '"').to_string();
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
    Ok(NpyHeader { descr, shape, data_offset: end })
}

/// The payload's size against what the header's shape needs.
fn check_payload(header: &NpyHeader, payload: usize) -> std::result::Result<(), FormatIssue> {
    let needed = header.data_bytes()?;
    if payload != needed {
        return Err(FormatIssue(format!(
            "shape {:?} of '{}' needs {needed} bytes of data, found {payload} ({})",
            header.shape,
            header.descr,
            if payload < needed { "truncated" } else { "trailing bytes" }
        )));
    }
    Ok(())
}

/// Parses `.npy` bytes; the error is a sentence without the file name.
pub fn parse_npy(bytes: &[u8]) -> std::result::Result<NpyArray, FormatIssue> {
    let header = parse_npy_header(bytes)?;
    let payload = &bytes[header.data_offset..];
    check_payload(&header, payload.len())?;
    let chunks = payload.chunks_exact(header.width()?);
    let data = match header.descr.as_str() {
        "<i4" => NpyData::I32(chunks.map(|c| i32::from_le_bytes(c.try_into().unwrap())).collect()),
        "<i8" => NpyData::I64(chunks.map(|c| i64::from_le_bytes(c.try_into().unwrap())).collect()),
        "<f4" => NpyData::F32(chunks.map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()),
        "<f8" => NpyData::F64(chunks.map(|c| f64::from_le_bytes(c.try_into().unwrap())).collect()),
        _ => NpyData::U8(payload.to_vec()),
    };
    Ok(NpyArray { shape: header.shape, data })
}

/// A 2-D little-endian f64 `.npy` file read in blocks of rows, never whole: for matrices larger
/// than memory (an active-learning pool of 10⁶ projected vectors, say). Each pass re-reads the
/// file from its first row.
pub struct NpyRowReader {
    path: PathBuf,
    file: std::fs::File,
    header: NpyHeader,
    /// One block's bytes and values, kept between passes (a fresh allocation per pass costs
    /// page faults comparable to the read itself).
    bytes: Vec<u8>,
    values: Vec<f64>,
}

impl NpyRowReader {
    /// Opens `path` and checks its header and length (a truncated file is refused here, not
    /// half-way through a pass).
    ///
    /// # Errors
    /// [`DataError::Format`] naming the file when it is not a 2-D `<f8` C-ordered array of the
    /// length its header states; [`DataError::Io`] when it cannot be read.
    pub fn open(path: &Path) -> Result<Self> {
        let bad = |what: String| DataError::format(path, "npy", what);
        let mut file = std::fs::File::open(path).map_err(|e| DataError::io(path, e))?;
        let length = file.metadata().map_err(|e| DataError::io(path, e))?.len() as usize;
        // The header is at most a few kilobytes; read until it parses or the file ends.
        let mut head = vec![0u8; length.min(1 << 16)];
        file.read_exact(&mut head).map_err(|e| DataError::io(path, e))?;
        let header = parse_npy_header(&head).map_err(|e| bad(e.0))?;
        if header.descr != "<f8" || header.shape.len() != 2 {
            return Err(bad(format!(
                "expected a 2-D float64 array ('<f8', shape (rows, columns)), found '{}' of shape {:?}; \
                 save it with np.save(path, np.asarray(x, dtype='<f8'))",
                header.descr, header.shape
            )));
        }
        check_payload(&header, length - header.data_offset).map_err(|e| bad(e.0))?;
        Ok(Self { path: path.to_path_buf(), file, header, bytes: Vec::new(), values: Vec::new() })
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.header.shape[0]
    }

    /// Number of columns.
    pub fn cols(&self) -> usize {
        self.header.shape[1]
    }

    /// The file being read.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// One pass over the file: calls `visit(first_row, values)` for consecutive blocks of at
    /// most `block_rows` rows, `values` row-major (`rows × cols`). Memory: one block.
    pub fn for_each_block<E: From<DataError>>(
        &mut self,
        block_rows: usize,
        mut visit: impl FnMut(usize, &[f64]) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        use std::io::Seek;
        let (rows, cols) = (self.rows(), self.cols());
        let block_rows = block_rows.max(1);
        self.file
            .seek(std::io::SeekFrom::Start(self.header.data_offset as u64))
            .map_err(|e| DataError::io(&self.path, e))?;
        let block_rows = block_rows.min(rows);
        self.bytes.resize(block_rows * cols * 8, 0);
        self.values.resize(block_rows * cols, 0.0);
        let mut first = 0;
        while first < rows {
            let count = block_rows.min(rows - first);
            let bytes = &mut self.bytes[..count * cols * 8];
            self.file.read_exact(bytes).map_err(|e| DataError::io(&self.path, e))?;
            let values = &mut self.values[..count * cols];
            for (v, b) in values.iter_mut().zip(bytes.chunks_exact(8)) {
                *v = f64::from_le_bytes(b.try_into().expect("8-byte chunks"));
            }
            visit(first, values)?;
            first += count;
        }
        Ok(())
    }
}

/// Writes a 2-D little-endian f64 `.npy` file row block by row block (for matrices larger than
/// memory), to a temporary sibling that [`NpyRowWriter::finish`] renames onto the path.
pub struct NpyRowWriter {
    path: PathBuf,
    tmp: PathBuf,
    file: std::io::BufWriter<std::fs::File>,
    rows: usize,
    cols: usize,
    written: usize,
}

impl NpyRowWriter {
    /// Starts `path` for a `rows × cols` array.
    pub fn create(path: &Path, rows: usize, cols: usize) -> Result<Self> {
        if cols == 0 {
            return Err(DataError::invalid("cols", 0, "a row needs at least one value"));
        }
        let tmp = hedge_run::atomic::temp_sibling(path);
        let file = std::fs::File::create(&tmp).map_err(|e| DataError::write(path, e))?;
        let mut file = std::io::BufWriter::with_capacity(1 << 20, file);
        let empty = NpyArray { shape: vec![rows, cols], data: NpyData::F64(Vec::new()) };
        file.write_all(&empty.to_npy_bytes()).map_err(|e| DataError::write(path, e))?;
        Ok(Self { path: path.to_path_buf(), tmp, file, rows, cols, written: 0 })
    }

    /// Appends whole rows (`values.len()` a multiple of the column count).
    pub fn write_rows(&mut self, values: &[f64]) -> Result<()> {
        if !values.len().is_multiple_of(self.cols) || self.written + values.len() / self.cols > self.rows {
            return Err(DataError::invalid(
                "rows",
                values.len(),
                format!("expected whole rows of {} values, at most {} rows in all", self.cols, self.rows),
            ));
        }
        for v in values {
            self.file.write_all(&v.to_le_bytes()).map_err(|e| DataError::write(&self.path, e))?;
        }
        self.written += values.len() / self.cols;
        Ok(())
    }

    /// Flushes and renames the file into place once every row is written.
    pub fn finish(self) -> Result<()> {
        if self.written != self.rows {
            let _ = std::fs::remove_file(&self.tmp);
            return Err(DataError::invalid("rows", self.written, format!("the header promised {} rows", self.rows)));
        }
        let file = self.file.into_inner().map_err(|e| DataError::write(&self.path, e.into_error()))?;
        file.sync_all().map_err(|e| DataError::write(&self.path, e))?;
        std::fs::rename(&self.tmp, &self.path).map_err(|e| DataError::write(&self.path, e))
    }
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
    parse_npz(read_bytes(path)?, path)
}

/// [`read_npz`] of the members named `only` (others, such as an array of class-name strings
/// beside a dataset's numbers, are skipped unread).
pub fn read_npz_members(path: &Path, only: &[&str]) -> Result<Vec<(String, NpyArray)>> {
    parse_npz_members(read_bytes(path)?, path, Some(only))
}

/// The member names of an `.npz` archive (without `.npy`), read from its directory alone.
pub fn npz_member_names(path: &Path) -> Result<Vec<String>> {
    let file = std::fs::File::open(path).map_err(|e| DataError::io(path, e))?;
    let archive = zip::ZipArchive::new(file)
        .map_err(|e| DataError::format(path, "npz (zip)", format!("{e}; the file may be truncated")))?;
    Ok(archive.file_names().map(|n| n.trim_end_matches(".npy").to_string()).collect())
}

/// [`read_npz`] on bytes already read (`path` names them in errors; the fuzz targets' entry).
pub(crate) fn parse_npz(bytes: Vec<u8>, path: &Path) -> Result<Vec<(String, NpyArray)>> {
    parse_npz_members(bytes, path, None)
}

pub(crate) fn parse_npz_members(bytes: Vec<u8>, path: &Path, only: Option<&[&str]>) -> Result<Vec<(String, NpyArray)>> {
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes))
        .map_err(|e| DataError::format(path, "npz (zip)", format!("{e}; the file may be truncated")))?;
    let mut out = Vec::with_capacity(archive.len());
    for i in 0..archive.len() {
        let mut member =
            archive.by_index(i).map_err(|e| DataError::format(path, "npz (zip)", format!("member {i}: {e}")))?;
        let name = member.name().trim_end_matches(".npy").to_string();
        if only.is_some_and(|only| !only.contains(&name.as_str())) {
            continue;
        }
        // The declared size is the archive's word, not a fact: it is checked against the limit
        // before anything is allocated, the buffer grows with what is actually read, and the
        // read stops one byte past the limit (a member that inflates past it is refused too).
        let declared = member.size();
        let header_slack = 1 << 16;
        let limit = (MAX_ARRAY_BYTES + header_slack) as u64;
        let too_large = |size: String| {
            DataError::format(
                path,
                "npz (zip)",
                format!(
                    "member '{name}' holds {size} bytes, over hedge's limit of {} GiB for one array; \
                     the archive is damaged or the array is too large to load whole",
                    MAX_ARRAY_BYTES >> 30
                ),
            )
        };
        if declared > limit {
            return Err(too_large(declared.to_string()));
        }
        let mut buf = Vec::with_capacity((declared as usize).min(1 << 26));
        (&mut member)
            .take(limit + 1)
            .read_to_end(&mut buf)
            .map_err(|e| DataError::format(path, "npz (zip)", format!("member '{name}': {e}")))?;
        if buf.len() as u64 > limit {
            return Err(too_large(format!("more than {limit}")));
        }
        let array =
            parse_npy(&buf).map_err(|what| DataError::format(path, "npy", format!("array '{name}': {what}")))?;
        out.push((name, array));
    }
    Ok(out)
}

/// Writes named arrays as an uncompressed `.npz` that `numpy.load` opens, atomically.
pub fn write_npz(path: &Path, arrays: &[(&str, NpyArray)]) -> Result<()> {
    let bytes = npz_bytes(arrays).map_err(|e| DataError::write(path, e))?;
    Ok(write_atomic(path, &bytes)?)
}

/// The bytes of an uncompressed `.npz` archive of `arrays`.
pub fn npz_bytes(arrays: &[(&str, NpyArray)]) -> std::io::Result<Vec<u8>> {
    let mut cursor = std::io::Cursor::new(Vec::new());
    let mut zip = zip::ZipWriter::new(&mut cursor);
    let options =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored).large_file(true);
    for (name, array) in arrays {
        zip.start_file(format!("{name}.npy"), options).map_err(std::io::Error::other)?;
        zip.write_all(&array.to_npy_bytes())?;
    }
    zip.finish().map_err(std::io::Error::other)?;
    Ok(cursor.into_inner())
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

    /// Blocks of any size see the rows the whole-file parser sees, in order; the file is
    /// written through a temporary sibling and only appears once finished.
    #[test]
    fn row_blocks_stream_what_was_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pool.npy");
        let values: Vec<f64> = (0..7 * 3).map(|v| v as f64 * 0.5 - 3.0).collect();
        let mut writer = NpyRowWriter::create(&path, 7, 3).unwrap();
        writer.write_rows(&values[..6]).unwrap();
        assert!(!path.exists(), "the file appears only when finished");
        assert!(writer.write_rows(&values[..4]).is_err(), "4 values are not whole rows of 3");
        writer.write_rows(&values[6..]).unwrap();
        writer.finish().unwrap();
        let whole = parse_npy(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(whole, NpyArray::new(vec![7, 3], NpyData::F64(values.clone())));
        let mut reader = NpyRowReader::open(&path).unwrap();
        assert_eq!((reader.rows(), reader.cols()), (7, 3));
        for block in [1, 3, 7, 100] {
            let mut seen = Vec::new();
            let mut firsts = Vec::new();
            reader
                .for_each_block(block, |first, rows| {
                    firsts.push(first);
                    seen.extend_from_slice(rows);
                    Ok::<(), DataError>(())
                })
                .unwrap();
            assert_eq!(seen, values, "block {block}");
            assert_eq!(firsts, (0..7).step_by(block).collect::<Vec<_>>());
        }
        let unfinished = NpyRowWriter::create(&dir.path().join("short.npy"), 7, 3).unwrap();
        assert!(unfinished.finish().unwrap_err().to_string().contains("promised 7 rows"));
        assert!(!dir.path().join("short.npy").exists());
    }

    #[test]
    fn row_reader_refuses_truncated_files_and_other_types_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let cut = dir.path().join("cut.npy");
        let bytes = NpyArray::new(vec![4, 2], NpyData::F64(vec![1.0; 8])).to_npy_bytes();
        std::fs::write(&cut, &bytes[..bytes.len() - 8]).unwrap();
        let msg = NpyRowReader::open(&cut).err().unwrap().to_string();
        assert!(msg.contains("cut.npy") && msg.contains("truncated"), "{msg}");
        let ints = dir.path().join("ints.npy");
        std::fs::write(&ints, NpyArray::new(vec![2, 2], NpyData::I64(vec![1; 4])).to_npy_bytes()).unwrap();
        let msg = NpyRowReader::open(&ints).err().unwrap().to_string();
        assert!(msg.contains("ints.npy") && msg.contains("'<i8'") && msg.contains("float64"), "{msg}");
        let flat = dir.path().join("flat.npy");
        std::fs::write(&flat, NpyArray::new(vec![3], NpyData::F64(vec![1.0; 3])).to_npy_bytes()).unwrap();
        assert!(NpyRowReader::open(&flat).err().unwrap().to_string().contains("shape [3]"));
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

    /// An `.npy` header whose shape wraps around: (1, 2^61, 2) of 8-byte floats is 2^65 bytes,
    /// which wrapping arithmetic makes 0 (and an empty payload then "matches"). Before the fix
    /// the array parsed with no data and the N-digit loader panicked indexing it.
    #[test]
    fn a_shape_whose_size_overflows_is_refused() {
        let header_only = |shape: &str| {
            let mut header = format!("{{'descr': '<f8', 'fortran_order': False, 'shape': {shape}, }}");
            header.push_str(&" ".repeat((64 - (10 + header.len() + 1) % 64) % 64));
            header.push('\n');
            let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
            bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
            bytes.extend_from_slice(header.as_bytes());
            bytes
        };
        let bytes = header_only(&format!("(1, {}, 2)", 1u64 << 61));
        let msg = parse_npy(&bytes).unwrap_err().0;
        assert!(msg.contains("more bytes than this machine can address"), "{msg}");

        let bytes = header_only(&format!("({}, 2)", 1u64 << 61));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("wrap.npy");
        std::fs::write(&path, &bytes).unwrap();
        let msg = NpyRowReader::open(&path).err().unwrap().to_string();
        assert!(msg.contains("wrap.npy") && msg.contains("damaged"), "{msg}");
    }

    /// A zip64 archive whose central directory claims a member of 2^62 bytes: before the fix
    /// `Vec::with_capacity` trusted the claim and the process aborted on allocation.
    #[test]
    fn an_npz_member_claiming_an_absurd_size_is_refused_before_allocation() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("huge.npz");
        write_npz(&path, &[("x", NpyArray::new(vec![2], NpyData::F64(vec![1.0, 2.0])))]).unwrap();
        let mut bytes = std::fs::read(&path).unwrap();
        // Central directory header (PK\x01\x02): name length at +28, extra length at +30, the
        // name at +46, then the extra fields; the zip64 field (id 0x0001) starts with the
        // 8-byte uncompressed size.
        let cd = bytes.windows(4).position(|w| w == b"PK\x01\x02").expect("central directory");
        let name_len = u16::from_le_bytes([bytes[cd + 28], bytes[cd + 29]]) as usize;
        let extra_len = u16::from_le_bytes([bytes[cd + 30], bytes[cd + 31]]) as usize;
        let mut at = cd + 46 + name_len;
        let end = at + extra_len;
        let mut patched = false;
        while at + 4 <= end {
            let id = u16::from_le_bytes([bytes[at], bytes[at + 1]]);
            let len = u16::from_le_bytes([bytes[at + 2], bytes[at + 3]]) as usize;
            if id == 1 {
                bytes[at + 4..at + 12].copy_from_slice(&(1u64 << 62).to_le_bytes());
                patched = true;
                break;
            }
            at += 4 + len;
        }
        assert!(patched, "the writer's zip64 field was not found");
        std::fs::write(&path, &bytes).unwrap();
        let msg = read_npz(&path).unwrap_err().to_string();
        assert!(msg.contains("huge.npz") && msg.contains("GiB"), "{msg}");
    }

    /// A write that fails says "cannot write" and names the file (issue 17 found write
    /// failures reported as "cannot read").
    #[test]
    fn write_failures_say_write() {
        let dir = tempfile::tempdir().unwrap();
        let not_a_folder = dir.path().join("file");
        std::fs::write(&not_a_folder, b"x").unwrap();
        let target = not_a_folder.join("out.npz");
        let msg =
            write_npz(&target, &[("x", NpyArray::new(vec![1], NpyData::F64(vec![1.0])))]).unwrap_err().to_string();
        assert!(msg.starts_with("cannot write") && msg.contains("out.npz"), "{msg}");
        let msg = NpyRowWriter::create(&target, 1, 1).err().unwrap().to_string();
        assert!(msg.starts_with("cannot write") && msg.contains("out.npz"), "{msg}");
    }
}
