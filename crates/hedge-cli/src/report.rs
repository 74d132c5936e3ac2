//! `hedge report`: writes the Markdown fragments the READMEs include (`results/<area>/report/`)
//! from the result files (`hedge_lab::report`).

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;
use hedge_lab::report::{fragments, stale, write, Results};

#[derive(Args)]
pub struct ReportArgs {
    /// The repository checkout whose results/ to read and write.
    #[arg(long, default_value = ".")]
    root: PathBuf,
    /// Write nothing; fail when a fragment differs from what its result files give.
    #[arg(long)]
    check: bool,
}

pub fn run(args: ReportArgs) -> Result<()> {
    if !args.root.join("results").is_dir() {
        bail!("--root '{}' has no results/ folder; give the repository checkout", args.root.display());
    }
    let all = fragments(&Results::new(&args.root))?;
    if args.check {
        let changed = stale(&args.root, &all);
        if !changed.is_empty() {
            let list: Vec<String> = changed.iter().map(|p| p.display().to_string()).collect();
            bail!("these fragments differ from what their result files give: {}; run `hedge report`", list.join(", "));
        }
        println!("report: {} fragments up to date", all.len());
    } else {
        let changed = write(&args.root, &all)?;
        println!("report: {} fragments, {} rewritten", all.len(), changed.len());
        for path in changed {
            println!("  {}", path.display());
        }
    }
    Ok(())
}
