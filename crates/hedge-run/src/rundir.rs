//! One run-directory layer for every experiment: a folder an experiment owns, whose files are
//! each written atomically and whose checkpoints are committed by a manifest written last.
//!
//! A checkpoint is several files that only make sense together (weights, optimiser moments,
//! the step they belong to). [`Checkpoint`] writes each of them to a `.pending-<name>` sibling,
//! then writes `checkpoint.json` (the step and the SHA-256 of every file), then renames the
//! pending files into place. [`RunDirectory::recover`] (called by [`RunDirectory::open`]) finishes
//! a commit the manifest announces (renaming pending files whose hash it names) and deletes
//! pending files of a checkpoint that never got its manifest, so a resume sees the complete
//! new checkpoint or the complete previous one, never a mix.
//!
//! Every write goes through the directory, so a test can stop the writer after any single
//! write ([`RunDirectory::stop_after_writes`]), the way a killed process would, and check that
//! resuming reaches the result of an uninterrupted run.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde::{de::DeserializeOwned, Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::{Result, RunError};

/// The manifest that commits a checkpoint.
pub const MANIFEST_FILE: &str = "checkpoint.json";
const PENDING_PREFIX: &str = ".pending-";
/// The prefix of a sealed copy: `sealed-config.json` holds what `config.json` was when the run
/// started (or was last changed through a flag that records the change).
pub const SEALED_PREFIX: &str = "sealed-";
const TEMP_PREFIX: &str = ".tmp-";

/// `checkpoint.json`: which files make up the last committed checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointManifest {
    /// The step (or round, or finished unit of work) the checkpoint holds.
    pub step: u64,
    /// Every file of the checkpoint, in the order they were written.
    pub files: SealedFiles,
    /// The JSON-lines logs of the run (every `*.jsonl` in its folder) as they stood at the
    /// commit: a resume and a report read them, so a log cut short or edited is refused instead
    /// of being rebuilt into a smaller result. Lines appended after the commit are work the
    /// checkpoint does not hold. (Absent in manifests written before logs were recorded.)
    #[serde(default, skip_serializing_if = "SealedFiles::is_empty")]
    pub logs: SealedFiles,
    /// The sealed copies of the run's definition (`sealed-config.json`, see
    /// [`RunDirectory::write_sealed_json`]) as they stood at the commit. (Absent in manifests
    /// written before definitions were sealed.)
    #[serde(default, skip_serializing_if = "SealedFiles::is_empty")]
    pub sealed: SealedFiles,
}

/// One file of a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestEntry {
    /// File name relative to the run directory.
    pub name: String,
    /// Lower-case hex SHA-256 of the file's bytes.
    pub sha256: String,
    pub bytes: u64,
}

/// Files of a folder sealed by their SHA-256 and size: a checkpoint's files, logs and sealed
/// copies ([`CheckpointManifest`]), an identification index's files. Its serde form is the list
/// of [`ManifestEntry`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SealedFiles(Vec<ManifestEntry>);

impl SealedFiles {
    /// The files `names` of `dir` as they are now, in that order.
    ///
    /// # Errors
    /// [`RunError::Io`] naming a file that cannot be read.
    pub fn of<'a>(dir: &Path, names: impl IntoIterator<Item = &'a str>) -> Result<Self> {
        names.into_iter().map(|name| ManifestEntry::of(dir, name)).collect::<Result<_>>().map(SealedFiles)
    }

    /// Every file of `dir` (not its sub-folders) whose name `wanted` accepts, sorted by name.
    ///
    /// # Errors
    /// [`RunError::Io`] naming the folder or a file that cannot be read.
    pub fn matching(dir: &Path, wanted: impl Fn(&str) -> bool) -> Result<Self> {
        let entries = std::fs::read_dir(dir).map_err(|e| RunError::io(dir, e))?;
        let mut names: Vec<String> = entries
            .flatten()
            .filter(|e| e.path().is_file())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|name| wanted(name))
            .collect();
        names.sort();
        Self::of(dir, names.iter().map(String::as_str))
    }

    /// Adds `entry`, replacing one of the same name.
    pub fn insert(&mut self, entry: ManifestEntry) {
        self.0.retain(|f| f.name != entry.name);
        self.0.push(entry);
    }

    /// Seals `name` of `dir` again as it is now (after a deliberate rewrite).
    ///
    /// # Errors
    /// [`RunError::Io`] naming the file when it cannot be read.
    pub fn reseal(&mut self, dir: &Path, name: &str) -> Result<()> {
        self.insert(ManifestEntry::of(dir, name)?);
        Ok(())
    }

    /// The entry of `name`.
    pub fn get(&self, name: &str) -> Option<&ManifestEntry> {
        self.0.iter().find(|f| f.name == name)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn clear(&mut self) {
        self.0.clear();
    }

    pub fn iter(&self) -> std::slice::Iter<'_, ManifestEntry> {
        self.0.iter()
    }

    /// The first file that is missing from `dir` or differs from its seal.
    ///
    /// # Errors
    /// [`RunError::Io`] naming a file that exists but cannot be read.
    pub fn first_broken(&self, dir: &Path) -> Result<Option<&ManifestEntry>> {
        for entry in &self.0 {
            let path = dir.join(&entry.name);
            if !path.is_file() || sha256_file(&path)? != entry.sha256 {
                return Ok(Some(entry));
            }
        }
        Ok(None)
    }

    /// Checks that the seal lists exactly `expected`: the message names a file it lacks, or one
    /// it lists that does not belong.
    pub fn lists_exactly(&self, expected: &[&str]) -> std::result::Result<(), String> {
        if let Some(missing) = expected.iter().find(|n| self.get(n).is_none()) {
            return Err(format!("does not list {missing} among its files, so it cannot be checked"));
        }
        match self.0.iter().find(|f| !expected.contains(&f.name.as_str())) {
            Some(stranger) => Err(format!("lists '{}', which is not one of its files", stranger.name)),
            None => Ok(()),
        }
    }
}

impl<'a> IntoIterator for &'a SealedFiles {
    type Item = &'a ManifestEntry;
    type IntoIter = std::slice::Iter<'a, ManifestEntry>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl ManifestEntry {
    /// The file `name` of `dir` as it is now.
    ///
    /// # Errors
    /// [`RunError::Io`] naming the file when it cannot be read.
    pub fn of(dir: &Path, name: &str) -> Result<Self> {
        let path = dir.join(name);
        let bytes = std::fs::read(&path).map_err(|e| RunError::io(&path, e))?;
        Ok(ManifestEntry { name: name.to_string(), sha256: sha256_hex(&bytes), bytes: bytes.len() as u64 })
    }
}

/// Counts writes and, in fault-injection tests, stops the writer after a chosen one.
#[derive(Debug, Default)]
struct WriteCounter {
    done: AtomicUsize,
    /// Stop after this many writes (0: never).
    stop_after: AtomicUsize,
}

/// A folder an experiment writes its results into.
#[derive(Debug, Clone)]
pub struct RunDirectory {
    path: PathBuf,
    writes: Arc<WriteCounter>,
}

impl RunDirectory {
    /// Makes `path` a new run directory of `kind` ("hib training run"): creates it, or refuses
    /// one that already holds files unless `overwrite` and it is hedge's folder of the same kind
    /// (then the experiment's files replace theirs; others are left alone). Call it after every
    /// check and data load, so a bad argument leaves no folder behind.
    pub fn create(path: &Path, kind: &str, overwrite: bool) -> Result<Self> {
        crate::atomic::prepare_output_dir(path, kind, overwrite)?;
        Ok(Self::at(path))
    }

    /// Opens an existing run directory to read it; changes nothing on disk (another process
    /// may be writing it).
    pub fn open(path: &Path) -> Result<Self> {
        if !path.is_dir() {
            return Err(RunError::MissingFile { path: path.to_path_buf(), hint: "no run directory there".into() });
        }
        Ok(Self::at(path))
    }

    /// Opens an existing run directory to continue it, recovering its last checkpoint
    /// ([`Self::recover`]).
    pub fn open_to_resume(path: &Path) -> Result<Self> {
        if !path.is_dir() {
            return Err(RunError::MissingFile {
                path: path.to_path_buf(),
                hint: "no run directory there; start the run without --resume (or check the path)".into(),
            });
        }
        let dir = Self::at(path);
        dir.recover()?;
        Ok(dir)
    }

    fn at(path: &Path) -> Self {
        RunDirectory { path: path.to_path_buf(), writes: Arc::default() }
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The path of the run's file `name`.
    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Whether the run has a file `name`.
    pub fn has(&self, name: &str) -> bool {
        self.file(name).is_file()
    }

    /// Fault injection for tests: every write after the `n`-th fails with
    /// [`RunError::WriterStopped`] and changes nothing, as if the process had been killed right
    /// after the `n`-th write. Writes made through clones of this directory count too.
    #[doc(hidden)]
    pub fn stop_after_writes(self, n: usize) -> Self {
        self.writes.stop_after.store(n, Ordering::SeqCst);
        self
    }

    /// Writes completed so far through this directory (and its clones).
    pub fn writes_done(&self) -> usize {
        self.writes.done.load(Ordering::SeqCst)
    }

    /// Before each write: refuse it when the fault plan says the writer has stopped.
    fn before_write(&self, path: &Path) -> Result<()> {
        let stop = self.writes.stop_after.load(Ordering::SeqCst);
        if stop > 0 && self.writes.done.load(Ordering::SeqCst) >= stop {
            return Err(RunError::WriterStopped { path: path.to_path_buf(), after: stop });
        }
        Ok(())
    }

    fn after_write(&self) {
        self.writes.done.fetch_add(1, Ordering::SeqCst);
    }

    /// Writes `bytes` as the file `name` through a temporary sibling and a rename (one write).
    pub fn write_bytes(&self, name: &str, bytes: &[u8]) -> Result<()> {
        let path = self.file(name);
        self.before_write(&path)?;
        ensure_parent(&path)?;
        crate::atomic::write_atomic(&path, bytes)?;
        self.after_write();
        Ok(())
    }

    /// Writes the file `name` with `save`, which writes whatever it writes to the temporary
    /// path it is given (keeping `name`'s extension, which libtorch's savers read); the result
    /// is renamed onto `name` (one write).
    pub fn write_with<E: From<RunError>>(
        &self,
        name: &str,
        save: impl FnOnce(&Path) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        let path = self.file(name);
        self.before_write(&path)?;
        ensure_parent(&path)?;
        let tmp = sibling(&path, TEMP_PREFIX);
        if let Err(e) = save(&tmp) {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
        std::fs::rename(&tmp, &path).map_err(|e| RunError::write(&path, e))?;
        self.after_write();
        Ok(())
    }

    /// Writes `value` as pretty JSON to `name`, atomically.
    pub fn write_json<T: Serialize + ?Sized>(&self, name: &str, value: &T) -> Result<()> {
        self.write_bytes(name, &pretty_json(value))
    }

    /// Reads the JSON file `name`.
    pub fn read_json<T: DeserializeOwned>(&self, name: &str) -> Result<T> {
        let path = self.file(name);
        let text = std::fs::read_to_string(&path).map_err(|e| RunError::io(&path, e))?;
        serde_json::from_str(&text).map_err(|e| RunError::format(&path, "JSON", e.to_string()))
    }

    /// The JSON file `name`, or `None` when the run has none.
    pub fn read_json_if_present<T: DeserializeOwned>(&self, name: &str) -> Result<Option<T>> {
        if !self.has(name) {
            return Ok(None);
        }
        self.read_json(name).map(Some)
    }

    /// Appends `value` as one line to the JSON-lines file `name` (one write).
    pub fn append_json_line<T: Serialize + ?Sized>(&self, name: &str, value: &T) -> Result<()> {
        let path = self.file(name);
        self.before_write(&path)?;
        let mut line = serde_json::to_vec(value).expect("a report serialises");
        line.push(b'\n');
        let mut f =
            std::fs::OpenOptions::new().create(true).append(true).open(&path).map_err(|e| RunError::write(&path, e))?;
        f.write_all(&line).map_err(|e| RunError::write(&path, e))?;
        self.after_write();
        Ok(())
    }

    /// Every line of the JSON-lines file `name` (none when the file does not exist). A last
    /// line without its newline is a write a crash cut short and is skipped.
    ///
    /// A log the last checkpoint recorded must still begin with what it recorded
    /// ([`RunError::Integrity`] otherwise): a result is never rebuilt from a damaged log.
    pub fn read_json_lines<T: DeserializeOwned>(&self, name: &str) -> Result<Vec<T>> {
        let path = self.file(name);
        if let Some(m) = self.manifest()? {
            if let Some(log) = m.logs.iter().find(|l| l.name == name) {
                self.check_log(&m, log)?;
            }
        }
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(RunError::io(&path, e)),
        };
        parse_json_lines(&complete_lines(&text), &path, 0)
    }

    /// The lines of the log `name` its last checkpoint covers: what an experiment's resume
    /// keeps and every report reads (the one reading of an experiment's log). The log is checked
    /// against the manifest (an edited or shortened committed part is refused); lines written
    /// after the commit belong to work no checkpoint holds and are left out with a warning
    /// naming them (a resume cuts them from the file; a report leaves the file as it is). A run
    /// whose manifest does not record its logs (older versions) or that has none reads whole.
    pub fn checkpointed_json_lines<T: DeserializeOwned>(&self, name: &str) -> Result<Vec<T>> {
        let committed = self.manifest()?.and_then(|m| {
            let log = m.logs.iter().find(|l| l.name == name).cloned()?;
            Some((m, log))
        });
        let Some((m, log)) = committed else { return self.read_json_lines(name) };
        let path = self.check_log(&m, &log)?;
        let text = std::fs::read_to_string(&path).map_err(|e| RunError::io(&path, e))?;
        let (held, beyond) = text.split_at(log.bytes as usize);
        let before = held.lines().count();
        let extra = complete_lines(beyond).lines().filter(|l| !l.trim().is_empty()).count();
        if extra > 0 {
            tracing::warn!(
                "{}: lines {}–{} were written after the last checkpoint ({MANIFEST_FILE}, step {}): they belong to work \
                 no checkpoint holds and are left out (--resume removes them)",
                path.display(),
                before + 1,
                before + extra,
                m.step
            );
        }
        parse_json_lines(held, &path, 0)
    }

    /// Rewrites the JSON-lines file `name` keeping the lines `keep` accepts, byte for byte (one
    /// write, none when nothing is dropped or the file does not exist). Resumes use it to drop
    /// lines of work a checkpoint lost.
    pub fn retain_json_lines<T: DeserializeOwned>(&self, name: &str, mut keep: impl FnMut(&T) -> bool) -> Result<()> {
        if !self.has(name) {
            return Ok(());
        }
        let path = self.file(name);
        let text = std::fs::read_to_string(&path).map_err(|e| RunError::io(&path, e))?;
        let mut kept = String::with_capacity(text.len());
        for (i, line) in text.split_inclusive('\n').enumerate() {
            // A last line without its newline is a write a crash cut short.
            if !line.ends_with('\n') || line.trim().is_empty() {
                continue;
            }
            let value: T = serde_json::from_str(line)
                .map_err(|e| RunError::format(&path, "JSON lines", format!("line {}: {e}", i + 1)))?;
            if keep(&value) {
                kept.push_str(line);
            }
        }
        if kept.len() == text.len() {
            return Ok(());
        }
        self.write_bytes(name, kept.as_bytes())
    }

    /// Refuses the log `name` when it holds fewer lines (`held`) than the checkpoint file
    /// `counted_in` says were logged (`logged`): a log cut short is never rebuilt into a smaller
    /// result. (Checkpoints that record their logs catch this by hash; older ones only count.)
    pub fn require_lines(&self, name: &str, held: usize, logged: usize, counted_in: &str) -> Result<()> {
        if held >= logged {
            return Ok(());
        }
        Err(RunError::Integrity {
            path: self.file(name),
            what: format!(
                "holds {held} lines but {counted_in} says {logged} were logged: the log was cut short, and results \
                 rebuilt from it would silently miss work. Restore the file from a copy, or start the run again \
                 with --overwrite"
            ),
        })
    }

    /// After a run failed before its first checkpoint: removes the files `names` it wrote, and
    /// the folder itself when this run made it (`made_here`) and nothing else is left, so a
    /// rerun of the same command is not refused by a stub. A run with a checkpoint is kept (it
    /// resumes).
    pub fn abandon_if_unstarted(&self, names: &[&str], made_here: bool) {
        if !matches!(self.manifest(), Ok(None)) {
            return;
        }
        let _ = self.remove_files(names);
        if made_here && crate::atomic::entries_besides_marker(&self.path).is_empty() {
            let _ = std::fs::remove_file(self.file(crate::atomic::OWNER_FILE));
            let _ = std::fs::remove_dir(&self.path);
        }
    }

    /// Removes the run's files `names` where present (a new run started with `--overwrite` over
    /// an earlier one, so that nothing of it is resumed or mixed in).
    pub fn remove_files(&self, names: &[&str]) -> Result<()> {
        for name in names {
            let path = self.file(name);
            if path.is_file() {
                std::fs::remove_file(&path).map_err(|e| RunError::write(&path, e))?;
            }
        }
        Ok(())
    }

    /// Every `*.jsonl` log in the folder, with its size and hash now.
    fn logs(&self) -> Result<SealedFiles> {
        SealedFiles::matching(&self.path, |name| name.ends_with(".jsonl") && !name.starts_with('.'))
    }

    /// Starts a checkpoint of `step`; nothing is visible until [`Checkpoint::commit`].
    pub fn checkpoint(&self, step: u64) -> Checkpoint<'_> {
        Checkpoint { dir: self, step, files: SealedFiles::default() }
    }

    /// Writes `value` to `name` and seals it: the copy `sealed-<name>` records the run's
    /// definition as it started (or as a recorded flag changed it), every later checkpoint
    /// records the copy's hash, and [`Self::check_sealed`] refuses the run when `name` no longer
    /// matches it.
    pub fn write_sealed_json<T: Serialize + ?Sized>(&self, name: &str, value: &T) -> Result<()> {
        // The copy first: a write cut short between the two leaves a copy no checkpoint has
        // recorded, which `check_sealed` recognises as hedge's own unfinished write.
        self.write_json(&format!("{SEALED_PREFIX}{name}"), value)?;
        self.write_json(name, value)
    }

    /// Refuses the run when `name` differs from its sealed copy (an edit after the run started),
    /// naming every changed field with both values; `how_to_change` says what to do instead
    /// (the flags that change a run on purpose, or a new run). A copy that no checkpoint has
    /// recorded yet is hedge's own write cut short between the copy and the file: the file is
    /// completed from the copy, with a warning. A run started before definitions were sealed
    /// has no copy and passes.
    pub fn check_sealed(&self, name: &str, how_to_change: &str) -> Result<()> {
        let copy = format!("{SEALED_PREFIX}{name}");
        if !self.has(&copy) {
            return Ok(());
        }
        let sealed: serde_json::Value = self.read_json(&copy)?;
        let mut changes = Vec::new();
        match self.read_json_if_present::<serde_json::Value>(name)? {
            Some(current) => json_differences("", &sealed, &current, &mut changes),
            None => changes.push(format!("{name} is missing")),
        }
        if changes.is_empty() {
            return Ok(());
        }
        let copy_sha = sha256_file(&self.file(&copy))?;
        let recorded = self.manifest()?.is_some_and(|m| m.sealed.get(&copy).is_some_and(|e| e.sha256 == copy_sha));
        if !recorded {
            tracing::warn!(
                "{}: completing hedge's own write of the run's definition, cut short before any checkpoint recorded \
                 it ({})",
                self.file(name).display(),
                changes.join("; ")
            );
            return self.write_json(name, &sealed);
        }
        Err(RunError::EditedDefinition {
            path: self.file(name),
            changes: changes.join("; "),
            how_to_change: how_to_change.to_string(),
        })
    }

    /// Every sealed copy in the folder, as a manifest records it.
    fn sealed_copies(&self) -> Result<SealedFiles> {
        SealedFiles::matching(&self.path, |name| name.starts_with(SEALED_PREFIX))
    }

    /// The last committed checkpoint, if the run has one.
    pub fn manifest(&self) -> Result<Option<CheckpointManifest>> {
        self.read_json_if_present(MANIFEST_FILE)
    }

    /// Brings the directory to its last committed checkpoint: renames pending files the
    /// manifest names (a commit cut short after its manifest), checks every file of the
    /// manifest against its hash, and removes pending and temporary files nothing names.
    /// Returns the manifest (`None` for a run that never committed one).
    pub fn recover(&self) -> Result<Option<CheckpointManifest>> {
        let manifest = self.manifest()?;
        if let Some(m) = &manifest {
            for entry in &m.files {
                let path = self.file(&entry.name);
                if path.is_file() && sha256_file(&path)? == entry.sha256 {
                    continue;
                }
                let pending = sibling(&path, PENDING_PREFIX);
                if pending.is_file() && sha256_file(&pending)? == entry.sha256 {
                    std::fs::rename(&pending, &path).map_err(|e| RunError::write(&path, e))?;
                    continue;
                }
                return Err(RunError::Integrity {
                    path,
                    what: format!(
                        "does not match {MANIFEST_FILE} (step {}, sha256 {}); the checkpoint was damaged after it \
                         was written. Restore the file, or start the run again with --overwrite",
                        m.step, entry.sha256
                    ),
                });
            }
            for log in &m.logs {
                let path = self.check_log(m, log)?;
                // Lines after the commit belong to work the checkpoint does not hold.
                let text = std::fs::read(&path).map_err(|e| RunError::io(&path, e))?;
                let (held, beyond) = text.split_at(log.bytes as usize);
                let extra = beyond.iter().filter(|&&b| b == b'\n').count();
                if extra > 0 {
                    let before = held.iter().filter(|&&b| b == b'\n').count();
                    tracing::warn!(
                        "{}: lines {}–{} were written after the last checkpoint ({MANIFEST_FILE}, step {}); the \
                         resume removes them and redoes their work",
                        path.display(),
                        before + 1,
                        before + extra,
                        m.step
                    );
                }
                let f = std::fs::OpenOptions::new().write(true).open(&path).map_err(|e| RunError::write(&path, e))?;
                f.set_len(log.bytes).map_err(|e| RunError::write(&path, e))?;
            }
        }
        self.remove_stray_files(&self.path)?;
        Ok(manifest)
    }

    /// Checks that the log `log` of the manifest `m` still begins with the bytes the manifest
    /// recorded (a log only grows); returns its path.
    fn check_log(&self, m: &CheckpointManifest, log: &ManifestEntry) -> Result<PathBuf> {
        let path = self.file(&log.name);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(RunError::io(&path, e)),
        };
        let held = bytes.len() as u64;
        let damage = if held < log.bytes {
            Some(format!("holds {held} bytes, fewer than the {} it had", log.bytes))
        } else if sha256_hex(&bytes[..log.bytes as usize]) != log.sha256 {
            Some(format!("its first {} bytes differ from what they were", log.bytes))
        } else {
            None
        };
        match damage {
            None => Ok(path),
            Some(damage) => Err(RunError::Integrity {
                path,
                what: format!(
                    "is damaged or cut short: {damage} when {MANIFEST_FILE} committed step {} (sha256 {}), so \
                     results rebuilt from it would silently miss work. Restore the file from a copy, or start the \
                     run again with --overwrite",
                    m.step, log.sha256
                ),
            }),
        }
    }

    fn remove_stray_files(&self, dir: &Path) -> Result<()> {
        let entries = std::fs::read_dir(dir).map_err(|e| RunError::io(dir, e))?;
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            if path.is_dir() {
                self.remove_stray_files(&path)?;
            } else if name.starts_with(PENDING_PREFIX) || name.starts_with(TEMP_PREFIX) {
                std::fs::remove_file(&path).map_err(|e| RunError::write(&path, e))?;
            }
        }
        Ok(())
    }
}

/// Every leaf where `new` differs from `old`, as `path: old → new` (a field only one side has
/// shows `(absent)` on the other).
fn json_differences(path: &str, old: &serde_json::Value, new: &serde_json::Value, out: &mut Vec<String>) {
    use serde_json::Value;
    match (old, new) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for k in keys {
                let at = if path.is_empty() { k.clone() } else { format!("{path}.{k}") };
                match (a.get(k), b.get(k)) {
                    (Some(x), Some(y)) => json_differences(&at, x, y, out),
                    (Some(x), None) => out.push(format!("{at}: {x} → (absent)")),
                    (None, Some(y)) => out.push(format!("{at}: (absent) → {y}")),
                    (None, None) => {}
                }
            }
        }
        _ if old != new => {
            out.push(format!("{}: {old} → {new}", if path.is_empty() { "(the whole file)" } else { path }))
        }
        _ => {}
    }
}

/// `text` up to its last newline: a last line without one is a write a crash cut short.
fn complete_lines(text: &str) -> String {
    if text.ends_with('\n') {
        text.to_string()
    } else {
        text[..text.rfind('\n').map_or(0, |i| i + 1)].to_string()
    }
}

/// Every non-empty line of `text` as a `T`, an error naming the file and line (counted from
/// `first_line` + 1) otherwise.
fn parse_json_lines<T: DeserializeOwned>(text: &str, path: &Path, first_line: usize) -> Result<Vec<T>> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l)
                .map_err(|e| RunError::format(path, "JSON lines", format!("line {}: {e}", first_line + i + 1)))
        })
        .collect()
}

/// A checkpoint being written: files are staged, then [`Checkpoint::commit`] makes them the
/// run's checkpoint all at once.
#[must_use = "a checkpoint is invisible until committed"]
pub struct Checkpoint<'a> {
    dir: &'a RunDirectory,
    step: u64,
    files: SealedFiles,
}

impl Checkpoint<'_> {
    /// Stages `bytes` as the checkpoint's file `name` (one write).
    pub fn stage_bytes(&mut self, name: &str, bytes: &[u8]) -> Result<()> {
        self.stage_with(name, |p| {
            std::fs::write(p, bytes).map_err(|e| RunError::write(p, e))?;
            Ok::<(), RunError>(())
        })
    }

    /// Stages `value` as the checkpoint's JSON file `name` (one write).
    pub fn stage_json<T: Serialize + ?Sized>(&mut self, name: &str, value: &T) -> Result<()> {
        self.stage_bytes(name, &pretty_json(value))
    }

    /// Stages the checkpoint's file `name`, written by `save` to the path it is given (one
    /// write).
    pub fn stage_with<E: From<RunError>>(
        &mut self,
        name: &str,
        save: impl FnOnce(&Path) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        let path = self.dir.file(name);
        self.dir.before_write(&path)?;
        ensure_parent(&path)?;
        let pending = sibling(&path, PENDING_PREFIX);
        save(&pending)?;
        let bytes = std::fs::metadata(&pending).map_err(|e| RunError::write(&pending, e))?.len();
        let sha256 = sha256_file(&pending)?;
        self.files.insert(ManifestEntry { name: name.to_string(), sha256, bytes });
        self.dir.after_write();
        Ok(())
    }

    /// Writes the manifest (the commit point), then renames every staged file into place (one
    /// write each). Files of the previous checkpoint that this one does not stage stay as they
    /// are but are no longer part of the checkpoint.
    pub fn commit(self) -> Result<CheckpointManifest> {
        let logs = self.dir.logs()?;
        let sealed = self.dir.sealed_copies()?;
        let manifest = CheckpointManifest { step: self.step, files: self.files, logs, sealed };
        self.dir.write_json(MANIFEST_FILE, &manifest)?;
        for entry in &manifest.files {
            let path = self.dir.file(&entry.name);
            self.dir.before_write(&path)?;
            std::fs::rename(sibling(&path, PENDING_PREFIX), &path).map_err(|e| RunError::write(&path, e))?;
            self.dir.after_write();
        }
        Ok(manifest)
    }
}

fn pretty_json<T: Serialize + ?Sized>(value: &T) -> Vec<u8> {
    let mut text = serde_json::to_vec_pretty(value).expect("a report serialises");
    text.push(b'\n');
    text
}

/// `path`'s sibling `<prefix><name>` (the extension kept, for writers that choose the format
/// by it).
fn sibling(path: &Path, prefix: &str) -> PathBuf {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    path.with_file_name(format!("{prefix}{name}"))
}

fn ensure_parent(path: &Path) -> Result<()> {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => std::fs::create_dir_all(p).map_err(|e| RunError::write(p, e)),
        _ => Ok(()),
    }
}

/// Lower-case hex SHA-256 of a file.
pub fn sha256_file(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).map_err(|e| RunError::io(path, e))?;
    Ok(sha256_hex(&bytes))
}

/// Lower-case hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A report reads exactly what the last checkpoint committed: lines appended after it are
    /// left out (and left on disk), an edit inside it is refused.
    #[test]
    fn a_log_reads_back_as_far_as_its_checkpoint() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = RunDirectory::create(&tmp.path().join("run"), "test run", false).unwrap();
        for step in 1..=3u64 {
            dir.append_json_line("log.jsonl", &step).unwrap();
        }
        dir.checkpoint(3).commit().unwrap();
        dir.append_json_line("log.jsonl", &4u64).unwrap();
        dir.append_json_line("log.jsonl", &3u64).unwrap();
        assert_eq!(dir.checkpointed_json_lines::<u64>("log.jsonl").unwrap(), [1, 2, 3]);
        assert_eq!(dir.read_json_lines::<u64>("log.jsonl").unwrap(), [1, 2, 3, 4, 3]);
        let path = dir.file("log.jsonl");
        std::fs::write(&path, "1\n9\n3\n4\n").unwrap();
        let e = dir.checkpointed_json_lines::<u64>("log.jsonl").unwrap_err().to_string();
        assert!(e.contains("differ") && e.contains("--overwrite"), "{e}");
    }

    /// A toy job with the shape of a training run: a config, a log line per step, a
    /// checkpoint (two files that must agree) every second step, and a result at the end.
    fn job(dir: &RunDirectory, steps: u64) -> Result<()> {
        let resume = dir.manifest()?;
        let (mut step, mut total) = match &resume {
            Some(m) => {
                let a: u64 = dir.read_json("a.json")?;
                let b: u64 = dir.read_json("b.json")?;
                assert_eq!(a * 2, b, "a checkpoint's files always agree");
                (m.step, a)
            }
            None => {
                dir.write_json("config.json", &steps)?;
                (0, 0)
            }
        };
        dir.retain_json_lines::<u64>("log.jsonl", |s| *s <= step)?;
        while step < steps {
            step += 1;
            total += step * step;
            dir.append_json_line("log.jsonl", &step)?;
            if step % 2 == 0 || step == steps {
                let mut c = dir.checkpoint(step);
                c.stage_json("a.json", &total)?;
                c.stage_json("b.json", &(total * 2))?;
                c.commit()?;
            }
        }
        dir.write_json("result.json", &total)
    }

    fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
        let mut v: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).unwrap()))
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_run_stopped_after_any_write_resumes_to_the_same_files() {
        let root = tempfile::tempdir().unwrap();
        let straight = RunDirectory::create(&root.path().join("straight"), "test run", false).unwrap();
        job(&straight, 5).unwrap();
        let writes = straight.writes_done();
        // config, 5 log lines, 3 checkpoints of (2 staged + manifest + 2 renames), result.
        assert_eq!(writes, 1 + 5 + 3 * 5 + 1);
        let expected = files(straight.path());
        for stop in 1..writes {
            let path = root.path().join(format!("stopped-{stop}"));
            let dir = RunDirectory::create(&path, "test run", false).unwrap().stop_after_writes(stop);
            let err = job(&dir, 5).unwrap_err();
            assert!(matches!(err, RunError::WriterStopped { .. }), "{err}");
            let resumed = RunDirectory::open_to_resume(&path).unwrap();
            job(&resumed, 5).unwrap();
            assert_eq!(files(&path), expected, "stopped after write {stop}");
        }
    }

    #[test]
    fn a_damaged_checkpoint_file_is_named() {
        let root = tempfile::tempdir().unwrap();
        let dir = RunDirectory::create(root.path(), "test run", false).unwrap();
        job(&dir, 2).unwrap();
        std::fs::write(dir.file("b.json"), "7\n").unwrap();
        let e = RunDirectory::open_to_resume(root.path()).unwrap_err().to_string();
        assert!(e.contains("b.json") && e.contains("checkpoint.json") && e.contains("step 2"), "{e}");
    }

    #[test]
    fn logs_are_part_of_the_checkpoint() {
        let root = tempfile::tempdir().unwrap();
        let dir = RunDirectory::create(root.path(), "test run", false).unwrap();
        job(&dir, 4).unwrap();
        let log = dir.file("log.jsonl");
        assert_eq!(dir.manifest().unwrap().unwrap().logs.len(), 1);
        // Lines after the last commit are work it does not hold: a resume drops them.
        std::fs::write(&log, "1\n2\n3\n4\n5\n").unwrap();
        RunDirectory::open_to_resume(root.path()).unwrap();
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "1\n2\n3\n4\n");
        // Cut short, emptied, removed or edited: refused by a resume and by a reader.
        for damaged in [Some("1\n2\n"), Some(""), None, Some("1\n2\n9\n4\n")] {
            match damaged {
                Some(text) => std::fs::write(&log, text).unwrap(),
                None => std::fs::remove_file(&log).unwrap(),
            }
            let e = RunDirectory::open_to_resume(root.path()).unwrap_err().to_string();
            assert!(e.contains("log.jsonl") && e.contains("cut short") && e.contains("step 4"), "{e}");
            let e = dir.read_json_lines::<u64>("log.jsonl").unwrap_err().to_string();
            assert!(e.contains("log.jsonl"), "{e}");
        }
    }

    #[test]
    fn a_line_cut_short_by_a_crash_is_skipped() {
        let root = tempfile::tempdir().unwrap();
        let dir = RunDirectory::create(root.path(), "test run", false).unwrap();
        std::fs::write(dir.file("log.jsonl"), "1\n2\n{\"half").unwrap();
        assert_eq!(dir.read_json_lines::<u64>("log.jsonl").unwrap(), vec![1, 2]);
        std::fs::write(dir.file("log.jsonl"), "1\n{oops\n").unwrap();
        let e = dir.read_json_lines::<u64>("log.jsonl").unwrap_err().to_string();
        assert!(e.contains("log.jsonl") && e.contains("line 2"), "{e}");
    }

    /// A sealed folder names a missing, changed or unlisted file; a deliberate rewrite is
    /// sealed again; the serde form is the plain list checkpoints and indexes always wrote.
    #[test]
    fn sealed_files_name_what_broke_and_serialise_as_a_list() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("a.bin"), b"abc").unwrap();
        std::fs::write(d.join("b.csv"), b"x,y\n").unwrap();
        let mut sealed = SealedFiles::of(d, ["a.bin", "b.csv"]).unwrap();
        let a = sealed.get("a.bin").unwrap();
        // SHA-256("abc"), FIPS 180-2 appendix B.1.
        assert_eq!(
            (a.sha256.as_str(), a.bytes),
            ("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", 3)
        );
        assert_eq!(sealed.first_broken(d).unwrap(), None);
        assert!(sealed.lists_exactly(&["a.bin", "b.csv"]).is_ok());
        assert!(sealed.lists_exactly(&["a.bin"]).unwrap_err().contains("'b.csv'"));
        assert!(sealed.lists_exactly(&["a.bin", "b.csv", "c.json"]).unwrap_err().contains("c.json"));
        std::fs::write(d.join("b.csv"), b"x,y\n1,2\n").unwrap();
        assert_eq!(sealed.first_broken(d).unwrap().map(|e| e.name.as_str()), Some("b.csv"));
        sealed.reseal(d, "b.csv").unwrap();
        assert_eq!((sealed.first_broken(d).unwrap(), sealed.len()), (None, 2));
        std::fs::remove_file(d.join("a.bin")).unwrap();
        assert_eq!(sealed.first_broken(d).unwrap().map(|e| e.name.as_str()), Some("a.bin"));
        let json = serde_json::to_value(&sealed).unwrap();
        assert!(json.is_array() && json[0]["name"] == "a.bin", "{json}");
        let csvs = SealedFiles::matching(d, |n| n.ends_with(".csv")).unwrap();
        assert_eq!(csvs.iter().map(|e| e.name.as_str()).collect::<Vec<_>>(), ["b.csv"]);
    }

    #[test]
    fn sha256_matches_a_known_digest() {
        // printf 'abc' | sha256sum
        let root = tempfile::tempdir().unwrap();
        let p = root.path().join("abc");
        std::fs::write(&p, "abc").unwrap();
        assert_eq!(sha256_file(&p).unwrap(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }
}
