//! HIB runs with a progress bar and a figure: training that shows where it is, and the quality
//! curve of a run's kept checkpoints drawn beside its `curve.json`.

use hedge_data::NDigitSplit;
use hedge_embed::experiment::{train_run, TrainPlan};
use hedge_embed::report::CurvePoint;
use hedge_embed::run::MODEL_FILE;
use hedge_embed::run_eval::{curve_files, curve_points};
use hedge_embed::{device_name, BatchComposition, HibConfig, HibData, RunDir, TrainEvent, Trainer};
use indicatif::{ProgressBar, ProgressStyle};
use tch::Device;
use tracing::info;

use crate::Result;

/// Trains (or resumes) the run to `config.steps` or the plan's budget ([`train_run`]) with a
/// progress bar on a terminal, a log line every tenth of the run otherwise, and the watched
/// sets and planning decisions logged.
pub fn train_with_progress(
    run: &RunDir,
    data: &HibData,
    config: &HibConfig,
    device: Device,
    resuming: bool,
    plan: &TrainPlan,
) -> Result<Trainer> {
    let batch = match config.data.batch {
        BatchComposition::Independent { pairs } => format!("{pairs} independent pairs"),
        BatchComposition::Grouped { classes, per_class } => format!("{classes} classes x {per_class} images"),
    };
    let length = match plan.budget_minutes {
        Some(m) if !config.steps_planned() => format!("{m} minutes"),
        _ => format!("{} steps", config.schedule.steps),
    };
    let images = match &config.data.own_images {
        None => format!("{}-digit MNIST", config.data.digits),
        Some(own) => format!("{} ({:?} images)", own.path.display(), own.shape),
    };
    info!(
        "training {:?} HIB, D = {}, {images}, {length} of {batch} on {} ({} threads) into {}",
        config.model.embedding.kind(),
        config.model.dim,
        device_name(device),
        tch::get_num_threads(),
        run.path.display()
    );
    let bar = ProgressBar::new(config.schedule.steps as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} steps  {msg}  ETA {eta}").expect("valid template"),
    );
    // Without a terminal the bar is hidden; log a line every tenth of the run instead.
    let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let mut log_every = (config.schedule.steps / 10).max(1);
    let trainer = train_run(run, data, config, device, resuming, plan, |event| match event {
        TrainEvent::Step { metrics: m, planned_steps } => {
            if bar.length() != Some(planned_steps as u64) {
                bar.set_length(planned_steps as u64);
                log_every = (planned_steps / 10).max(1);
            }
            bar.set_position(m.step as u64);
            if !tty && (m.step % log_every == 0 || m.step == planned_steps) {
                info!(
                    "step {}/{}: loss {:.4} kl {:.2} a {:.3} b {:.3} {:.0} pairs/s",
                    m.step, planned_steps, m.loss, m.kl, m.a, m.b, m.pairs_per_s
                );
            }
            if m.step % 10 == 0 || m.step == planned_steps {
                bar.set_message(format!(
                    "loss {:.4} kl {:.2} a {:.2} b {:.2} {:.0} pairs/s",
                    m.loss, m.kl, m.a, m.b, m.pairs_per_s
                ));
            }
        }
        TrainEvent::Planned { steps, seconds_per_step } => {
            info!("budget: {steps} steps planned at {:.1} ms a step", seconds_per_step * 1e3)
        }
        TrainEvent::Monitor(r) => {
            bar.suspend(|| info!("step {} ({:.0} s): {}", r.step, r.train_seconds, r.sets_line()));
        }
        TrainEvent::BudgetReached { step } => info!("budget reached at step {step}"),
        TrainEvent::TargetReached { step, train_seconds } => {
            info!("target reached at step {step} after {:.1} minutes of training", train_seconds / 60.0)
        }
        TrainEvent::Stopped { step } => info!("stopped at step {step}; the run resumes from there"),
    })?;
    bar.finish();
    info!("wrote {}", run.file(MODEL_FILE).display());
    Ok(trainer)
}

/// [`curve_points`] and its PNG beside the JSON: verification AP and KNN accuracy, clean and
/// corrupt, against training steps.
pub fn curve(
    run: &RunDir,
    data: &HibData,
    repeats: usize,
    split: NDigitSplit,
    device: Device,
    command: &str,
) -> Result<Vec<CurvePoint>> {
    let rows = curve_points(run, data, repeats, split, device, command)?;
    let (_, png_name) = curve_files(split);
    let series = |f: &dyn Fn(&CurvePoint) -> Option<f64>| -> Vec<(f64, f64)> {
        rows.iter().filter_map(|r| Some((r.step as f64, f(r)?))).collect()
    };
    hedge_plot::line_chart(
        &run.file(&png_name),
        &[
            ("verification AP, clean", series(&|r| r.verification_ap.clean)),
            ("verification AP, corrupt", series(&|r| r.verification_ap.corrupt)),
            ("KNN accuracy, clean", series(&|r| r.knn_accuracy.clean)),
            ("KNN accuracy, corrupt gallery", series(&|r| r.knn_accuracy.corrupt)),
        ],
        "training steps",
        split.name(),
        &format!("{}: quality vs training steps", run.path.display()),
    )?;
    Ok(rows)
}
