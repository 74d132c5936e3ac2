//! Writing files so that a crash never leaves a half-written file where a good one was.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::{Result, RunError};

/// A sibling path to write to before renaming onto `path`; it keeps `path`'s extension
/// because some writers (libtorch's safetensors) choose the format by extension.
pub fn temp_sibling(path: &Path) -> PathBuf {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    path.with_file_name(format!(".tmp-{}-{name}", std::process::id()))
}

/// Writes `bytes` to `path` through a temporary sibling file and a rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = temp_sibling(path);
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    result.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        RunError::write(path, e)
    })
}

/// The file that marks a folder as hedge's (JSON: the version, whether hedge made the folder, and
/// the files it wrote into a folder it did not make): every command that makes an output folder
/// writes it there first, and `--overwrite` replaces only what it records, so a folder or file
/// hedge did not make (a user's, a data folder) is never replaced or emptied.
pub const OWNER_FILE: &str = ".hedge-owned";

/// The entries of `dir` other than hedge's own marker (none when `dir` does not exist).
pub fn entries_besides_marker(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| entries.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    names.retain(|n| n != OWNER_FILE);
    names.sort();
    names
}

/// What [`OWNER_FILE`] records: hedge made the whole folder (and which kind of folder, written by
/// which command), or wrote these files into a folder it did not make (reports written beside
/// their inputs).
#[derive(Debug, Default, Clone, serde::Serialize, serde::Deserialize)]
struct Ownership {
    hedge: String,
    folder: bool,
    /// What the folder holds ("hib training run", "active-learning experiment", ...): a folder
    /// of one kind is never overwritten by a command that writes another. Markers written before
    /// hedge recorded kinds have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    kind: Option<String>,
    /// The command that wrote the folder (`hedge hib train`), for the messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    command: Option<String>,
    #[serde(default)]
    files: Vec<String>,
}

fn ownership(dir: &Path) -> Option<Ownership> {
    let text = std::fs::read_to_string(dir.join(OWNER_FILE)).ok()?;
    serde_json::from_str(&text).ok()
}

fn write_ownership(dir: &Path, o: &Ownership) -> Result<()> {
    let text = serde_json::to_string_pretty(o).expect("ownership serialises");
    write_atomic(&dir.join(OWNER_FILE), format!("{text}\n").as_bytes())
}

/// The command this process runs, as a user typed it up to its first flag (`hedge hib train`).
fn current_command() -> String {
    let mut args = std::env::args();
    let program = args
        .next()
        .map(|a| Path::new(&a).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or(a))
        .unwrap_or_else(|| "hedge".into());
    std::iter::once(program).chain(args.take_while(|a| !a.starts_with('-')).take(3)).collect::<Vec<_>>().join(" ")
}

/// Whether hedge made `dir` (its [`OWNER_FILE`] says so).
pub fn is_hedge_folder(dir: &Path) -> bool {
    ownership(dir).is_some_and(|o| o.folder)
}

/// The kind of folder `dir` is, as its [`OWNER_FILE`] records it (`None` when hedge did not make
/// it or made it before it recorded kinds).
pub fn folder_kind(dir: &Path) -> Option<String> {
    ownership(dir).filter(|o| o.folder).and_then(|o| o.kind)
}

/// Whether hedge wrote the file `name` in `dir` (it made the folder, or recorded the file).
pub fn hedge_wrote(dir: &Path, name: &str) -> bool {
    ownership(dir).is_some_and(|o| o.folder || o.files.iter().any(|f| f == name))
}

/// Makes `out` ready to hold a new folder of `kind` ("hib training run"): creates it and marks
/// it as hedge's, or refuses one that already holds files unless `overwrite`, hedge made it and
/// it is a folder of the same kind (then files the command writes replace theirs, each
/// atomically; the command removes the rest of its own earlier files; others are left alone).
/// Commands call this after every check and data load, so a bad argument never leaves an empty
/// folder behind.
pub fn prepare_output_dir(out: &Path, kind: &str, overwrite: bool) -> Result<()> {
    check_output_dir(out, kind, overwrite)?;
    std::fs::create_dir_all(out).map_err(|e| RunError::write(out, e))?;
    mark_as_hedges(out, kind)
}

/// Marks `dir` as a folder of `kind` made by hedge, written by this process's command (its
/// [`OWNER_FILE`]).
pub fn mark_as_hedges(dir: &Path, kind: &str) -> Result<()> {
    let mut o = ownership(dir).unwrap_or_default();
    let command = current_command();
    if o.folder && o.kind.as_deref() == Some(kind) && o.command.as_deref() == Some(command.as_str()) {
        return Ok(());
    }
    o.hedge = env!("CARGO_PKG_VERSION").into();
    o.folder = true;
    o.kind = Some(kind.into());
    o.command = Some(command);
    write_ownership(dir, &o)
}

/// The kind of a folder [`prepare_report_files`] made for its reports.
pub const REPORT_FOLDER: &str = "report folder";

/// Makes `out` ready for the report files `names` written beside other files (a Pareto front
/// beside its sweeps): creates it if needed; refuses when one of `names` is already there,
/// unless `overwrite` and hedge wrote it; records `names` as hedge's.
pub fn prepare_report_files(out: &Path, names: &[&str], overwrite: bool) -> Result<()> {
    if std::fs::symlink_metadata(out).is_ok() && !out.is_dir() {
        return Err(RunError::OutputNotFolder { path: out.to_path_buf() });
    }
    for name in names {
        if out.join(name).exists() {
            if !overwrite {
                return Err(RunError::OutputNotEmpty { path: out.to_path_buf(), entries: 1, example: (*name).into() });
            }
            if !hedge_wrote(out, name) {
                return Err(RunError::OutputNotHedges { path: out.to_path_buf(), example: (*name).into() });
            }
        }
    }
    let fresh = !out.exists();
    std::fs::create_dir_all(out).map_err(|e| RunError::write(out, e))?;
    let mut o = ownership(out).unwrap_or_default();
    o.hedge = env!("CARGO_PKG_VERSION").into();
    if fresh {
        o.folder = true;
        o.kind = Some(REPORT_FOLDER.into());
        o.command = Some(current_command());
    }
    for name in names {
        if !o.files.iter().any(|f| f == name) {
            o.files.push((*name).into());
        }
    }
    write_ownership(out, &o)
}

/// The refusal of [`prepare_output_dir`] without creating anything: commands that compute for
/// minutes before writing call it first, so the work never ends in a refused folder.
pub fn check_output_dir(out: &Path, kind: &str, overwrite: bool) -> Result<()> {
    // `symlink_metadata`: a link to nothing "does not exist" for `exists`, yet blocks the folder.
    if std::fs::symlink_metadata(out).is_ok() && !out.is_dir() {
        return Err(RunError::OutputNotFolder { path: out.to_path_buf() });
    }
    let names = entries_besides_marker(out);
    if names.is_empty() {
        return Ok(());
    }
    if !overwrite {
        return Err(RunError::OutputNotEmpty {
            path: out.to_path_buf(),
            entries: names.len(),
            example: names[0].clone(),
        });
    }
    let Some(o) = ownership(out).filter(|o| o.folder) else {
        return Err(RunError::OutputNotHedges { path: out.to_path_buf(), example: names[0].clone() });
    };
    match o.kind {
        Some(theirs) if theirs != kind => Err(RunError::OutputOfAnotherKind {
            path: out.to_path_buf(),
            theirs,
            command: o.command.unwrap_or_else(|| "an earlier hedge command".into()),
            ours: kind.to_string(),
        }),
        Some(_) => Ok(()),
        None => {
            tracing::warn!(
                "'{}' was made by hedge {} before it recorded which kind of folder it made; --overwrite takes it as \
                 a {kind} (if another command wrote it, stop and choose another --out: files of both would mix)",
                out.display(),
                o.hedge
            );
            Ok(())
        }
    }
}

/// Refuses a single output file `path` (flag `flag`) that would replace something of the
/// user's: its folder must exist; an existing file is replaced only with `overwrite` and when
/// `hedge_wrote` recognises it as a file of the kind this command writes.
pub fn check_output_file(path: &Path, flag: &str, overwrite: bool, hedge_wrote: impl Fn(&Path) -> bool) -> Result<()> {
    let bad =
        |reason: String| RunError::InvalidConfig { field: "out", value: format!("{flag} {}", path.display()), reason };
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        if !parent.is_dir() {
            return Err(bad("its folder does not exist; create it first".into()));
        }
    }
    if std::fs::symlink_metadata(path).is_err() {
        return Ok(());
    }
    if !path.is_file() {
        return Err(bad("is a folder or a link, not a file; name a new file".into()));
    }
    if !overwrite {
        return Err(bad("already exists; choose another name (or pass --overwrite where the command has it)".into()));
    }
    if !hedge_wrote(path) {
        return Err(bad(
            "already exists and is not a file this command writes, so --overwrite does not replace it; choose another \
             name"
                .into(),
        ));
    }
    Ok(())
}

/// Refuses an output folder `out` that lies inside (or is) the input folder `input` given by
/// `flag`: what a run writes there would become part of its own input on the next read.
pub fn check_out_not_inside(out: &Path, input: &Path, flag: &str) -> Result<()> {
    // Canonicalise the deepest existing ancestor of `out` (it may not exist yet).
    let mut existing = out.to_path_buf();
    let mut rest = Vec::new();
    while !existing.exists() {
        match (existing.file_name().map(|n| n.to_os_string()), existing.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = if parent.as_os_str().is_empty() { PathBuf::from(".") } else { parent.to_path_buf() };
            }
            _ => break,
        }
    }
    let (Ok(mut out_full), Ok(input_full)) = (existing.canonicalize(), input.canonicalize()) else { return Ok(()) };
    for name in rest.into_iter().rev() {
        out_full.push(name);
    }
    if out_full.starts_with(&input_full) {
        return Err(RunError::OutputInsideInput {
            path: out.to_path_buf(),
            input: input.to_path_buf(),
            flag: flag.to_string(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_output_folder_with_files_is_refused_unless_overwrite() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("run");
        prepare_output_dir(&out, "test run", false).unwrap();
        assert!(out.is_dir() && is_hedge_folder(&out));
        // Holding only hedge's marker, it counts as empty: a failed start blocks no rerun.
        prepare_output_dir(&out, "test run", false).unwrap();
        write_atomic(&out.join("rounds.jsonl"), b"{}\n").unwrap();
        let e = prepare_output_dir(&out, "test run", false).unwrap_err().to_string();
        assert!(e.contains("rounds.jsonl") && e.contains("--overwrite"), "{e}");
        prepare_output_dir(&out, "test run", true).unwrap();
        assert_eq!(std::fs::read(out.join("rounds.jsonl")).unwrap(), b"{}\n", "overwrite deletes nothing itself");
    }

    #[test]
    fn overwrite_is_refused_in_a_folder_of_another_kind() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("run");
        prepare_output_dir(&out, "active-learning experiment", false).unwrap();
        write_atomic(&out.join("rounds.jsonl"), b"{}\n").unwrap();
        let e = prepare_output_dir(&out, "hib training run", true).unwrap_err().to_string();
        assert!(
            e.contains("kind 'active-learning experiment'")
                && e.contains("of kind 'hib training run'")
                && e.contains("another --out"),
            "{e}"
        );
        assert_eq!(folder_kind(&out).as_deref(), Some("active-learning experiment"), "a refusal changes no marker");
        // The same kind is replaced; a folder holding only a marker takes the new kind.
        prepare_output_dir(&out, "active-learning experiment", true).unwrap();
        let empty = dir.path().join("empty");
        prepare_output_dir(&empty, "active-learning experiment", false).unwrap();
        prepare_output_dir(&empty, "hib training run", false).unwrap();
        assert_eq!(folder_kind(&empty).as_deref(), Some("hib training run"));
        // A marker from before kinds were recorded is taken as the new kind (with a warning).
        let old = dir.path().join("old");
        std::fs::create_dir(&old).unwrap();
        std::fs::write(old.join(OWNER_FILE), "{\"hedge\": \"0.1.0\", \"folder\": true, \"files\": []}").unwrap();
        std::fs::write(old.join("config.json"), "{}").unwrap();
        prepare_output_dir(&old, "hib training run", true).unwrap();
        assert_eq!(folder_kind(&old).as_deref(), Some("hib training run"));
    }

    #[test]
    fn overwrite_is_refused_in_a_folder_hedge_did_not_make() {
        let dir = tempfile::tempdir().unwrap();
        let mine = dir.path().join("photos");
        std::fs::create_dir(&mine).unwrap();
        std::fs::write(mine.join("holiday.png"), b"not hedge's").unwrap();
        let e = prepare_output_dir(&mine, "test run", true).unwrap_err().to_string();
        assert!(e.contains("holiday.png") && e.contains("did not make") && e.contains("another --out"), "{e}");
        assert!(!is_hedge_folder(&mine), "a refused folder is not marked");
        assert_eq!(std::fs::read(mine.join("holiday.png")).unwrap(), b"not hedge's");
        // An empty folder of the user's is fine to write into (nothing to lose); it becomes hedge's.
        let empty = dir.path().join("empty");
        std::fs::create_dir(&empty).unwrap();
        prepare_output_dir(&empty, "test run", false).unwrap();
        assert!(is_hedge_folder(&empty));
    }

    #[test]
    fn report_files_beside_other_files_replace_only_what_hedge_wrote() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("sweeps");
        std::fs::create_dir(&out).unwrap();
        std::fs::write(out.join("notes.md"), b"mine").unwrap();
        prepare_report_files(&out, &["pareto.md"], false).unwrap();
        write_atomic(&out.join("pareto.md"), b"front").unwrap();
        assert!(hedge_wrote(&out, "pareto.md") && !hedge_wrote(&out, "notes.md") && !is_hedge_folder(&out));
        // Again: refused without --overwrite, replaced with it.
        let e = prepare_report_files(&out, &["pareto.md"], false).unwrap_err().to_string();
        assert!(e.contains("pareto.md") && e.contains("--overwrite"), "{e}");
        prepare_report_files(&out, &["pareto.md"], true).unwrap();
        // A user's file of the same name is never replaced.
        let theirs = dir.path().join("theirs");
        std::fs::create_dir(&theirs).unwrap();
        std::fs::write(theirs.join("pareto.md"), b"their own").unwrap();
        let e = prepare_report_files(&theirs, &["pareto.md"], true).unwrap_err().to_string();
        assert!(e.contains("did not make"), "{e}");
        assert_eq!(std::fs::read(theirs.join("pareto.md")).unwrap(), b"their own");
        assert_eq!(std::fs::read(out.join("notes.md")).unwrap(), b"mine");
    }

    #[test]
    fn an_output_file_is_refused_as_a_folder() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("notes.txt");
        std::fs::write(&file, b"mine").unwrap();
        for overwrite in [false, true] {
            let e = prepare_output_dir(&file, "test run", overwrite).unwrap_err().to_string();
            assert!(e.contains("notes.txt") && e.contains("not a folder"), "{e}");
        }
        assert_eq!(std::fs::read(&file).unwrap(), b"mine");
    }

    #[test]
    fn an_output_folder_inside_an_input_folder_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir_all(data.join("cats")).unwrap();
        for out in [data.clone(), data.join("run"), data.join("cats/deeper/run")] {
            let e = check_out_not_inside(&out, &data, "--data").unwrap_err().to_string();
            assert!(e.contains("--data") && e.contains("inside"), "{e}");
        }
        check_out_not_inside(&dir.path().join("runs/a"), &data, "--data").unwrap();
        // A sibling whose name starts with the input's is not inside it.
        check_out_not_inside(&dir.path().join("data-runs"), &data, "--data").unwrap();
    }
}
