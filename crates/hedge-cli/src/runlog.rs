//! What every multi-run experiment command shares: a progress bar over runs.

/// A bar counting `len` runs of what `unit` names ("runs", "networks").
pub fn runs_bar(len: u64, unit: &str) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new(len);
    bar.set_style(
        indicatif::ProgressStyle::with_template(&format!(
            "{{bar:30}} {{pos}}/{{len}} {unit} {{elapsed_precise}} ETA {{eta}} {{msg}}"
        ))
        .expect("template"),
    );
    bar
}
