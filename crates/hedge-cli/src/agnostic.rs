//! `hedge agnostic …`: concept-agnostic networks (gradient reversal) and their audit.

use std::path::PathBuf;

use anyhow::{anyhow, bail, Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use hedge_agnostic::experiment::{run_context, ContextAudit, ContextTensors};
use hedge_agnostic::{Adversary, ModelConfig, TrainConfig};
use hedge_data::{Backgrounds, ContextMnistConfig, Mnist};
use serde_json::{json, Value};

#[derive(Subcommand)]
pub enum AgnosticCommand {
    /// Trains one network per α and repeat and audits each: target accuracy on IID, balanced and
    /// reversed tests, G_p's accuracy, fresh probes, flip rate, mask share. Writes metrics.jsonl,
    /// summary.json, table.md, accuracy_vs_alpha.png and probe_vs_alpha.png.
    Sweep(SweepArgs),
    /// Rebuilds summary.json, table.md and the figures from a sweep directory's metrics.jsonl
    /// (for example after an interrupted sweep).
    Report(ReportArgs),
}

#[derive(Args)]
pub struct ReportArgs {
    /// A directory written by `hedge agnostic sweep`.
    #[arg(long)]
    out: PathBuf,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum DatasetArg {
    ContextMnist,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum AdversaryArg {
    Reversal,
    Confusion,
}

#[derive(Args)]
pub struct SweepArgs {
    #[arg(long, value_enum, default_value = "context-mnist")]
    dataset: DatasetArg,
    /// start:end:step, or a comma-separated list.
    #[arg(long, default_value = "0:1:0.1")]
    alphas: String,
    /// Networks per α (different initialisation and batches).
    #[arg(long, default_value_t = 3)]
    repeats: u64,
    /// Background–target agreement in the target-labelled training set and the IID test.
    #[arg(long, default_value_t = 0.95)]
    rho: f64,
    #[arg(long, default_value_t = 10_000)]
    target_train: usize,
    #[arg(long, default_value_t = 10_000)]
    context_train: usize,
    #[arg(long, default_value_t = 4_000)]
    test: usize,
    /// SGD steps per network (64 target + 64 context images each).
    #[arg(long, default_value_t = 1500)]
    steps: usize,
    /// How G_f hides the concept: the paper's gradient reversal, or a confusion loss.
    #[arg(long, value_enum, default_value = "reversal")]
    adversary: AdversaryArg,
    /// G_p updates per feature update (1: plain GRL).
    #[arg(long, default_value_t = 1)]
    adversary_steps: usize,
    /// Keep α fixed instead of ramping it up.
    #[arg(long)]
    no_ramp: bool,
    /// Adam steps per probe.
    #[arg(long, default_value_t = 300)]
    probe_steps: usize,
    /// Intra-op threads for libtorch (0: its default).
    #[arg(long, default_value_t = 0)]
    threads: usize,
    #[arg(long)]
    out: PathBuf,
}

pub fn run(command: AgnosticCommand) -> Result<()> {
    match command {
        AgnosticCommand::Sweep(args) => sweep(args),
        AgnosticCommand::Report(args) => report(args),
    }
}

/// "0:1:0.1" → 0, 0.1, …, 1; "0,0.5,1" → those.
pub fn parse_alphas(spec: &str) -> Result<Vec<f64>> {
    let bad = || {
        anyhow!("--alphas '{spec}': expected start:end:step (e.g. 0:1:0.1) or a list (e.g. 0,0.5,1), values in [0, 1]")
    };
    let values: Vec<f64> = if spec.contains(':') {
        let parts: Vec<f64> =
            spec.split(':').map(|p| p.trim().parse::<f64>()).collect::<Result<_, _>>().map_err(|_| bad())?;
        let [start, end, step] = parts[..] else { return Err(bad()) };
        if step.is_nan() || step <= 0.0 || end < start {
            return Err(bad());
        }
        let count = ((end - start) / step + 1e-9).floor() as usize;
        (0..=count).map(|k| ((start + step * k as f64) * 1e9).round() / 1e9).collect()
    } else {
        spec.split(',').map(|p| p.trim().parse::<f64>()).collect::<Result<_, _>>().map_err(|_| bad())?
    };
    if values.is_empty() || values.iter().any(|a| !(0.0..=1.0).contains(a)) {
        return Err(bad());
    }
    Ok(values)
}

fn sweep(args: SweepArgs) -> Result<()> {
    crate::set_threads(args.threads);
    let alphas = parse_alphas(&args.alphas)?;
    if args.repeats == 0 {
        bail!("--repeats must be ≥ 1");
    }
    let dir = hedge_data::data_dir()?;
    let mnist = Mnist::load(&dir.join("mnist"))?;
    let backgrounds = Backgrounds::load(&dir.join("bsds500"))?;
    let data_config = ContextMnistConfig {
        rho: args.rho,
        target_train: args.target_train,
        context_train: args.context_train,
        test: args.test,
        ..Default::default()
    };
    let data = data_config.build(&mnist, &backgrounds)?;
    let measured = json!({
        "target_train": data.target_train.agreement(), "context_train": data.context_train.agreement(),
        "test_iid": data.test_iid.agreement(), "test_balanced": data.test_balanced.agreement(),
        "test_reversed": data.test_reversed.agreement(), "probe_train": data.probe_train.agreement(),
        "probe_test": data.probe_test.agreement() });
    let tensors = ContextTensors::new(&data);
    let model = ModelConfig::default();
    let adversary = match args.adversary {
        AdversaryArg::Reversal => Adversary::Reversal,
        AdversaryArg::Confusion => Adversary::Confusion,
    };
    let base = TrainConfig {
        ramp: !args.no_ramp,
        steps: args.steps,
        adversary,
        adversary_steps: args.adversary_steps,
        ..Default::default()
    };
    base.with_alpha(alphas[0]).check()?;
    std::fs::create_dir_all(&args.out).with_context(|| format!("cannot create {}", args.out.display()))?;
    let config_json = json!({ "command": crate::hib::command_line(), "dataset": "context-mnist", "data": data_config,
        "measured_agreement": measured, "model": model, "train": base, "alphas": alphas, "repeats": args.repeats,
        "probe_steps": args.probe_steps, "threads": tch::get_num_threads() });
    hedge_data::write_atomic(&args.out.join("config.json"), serde_json::to_string_pretty(&config_json)?.as_bytes())?;
    let bar = crate::runlog::runs_bar(alphas.len() as u64 * args.repeats, "networks");
    let mut audits: Vec<ContextAudit> = Vec::new();
    let mut log = crate::runlog::JsonLines::new(&args.out.join("metrics.jsonl"));
    for repeat in 0..args.repeats {
        for &alpha in &alphas {
            bar.set_message(format!("α = {alpha}, repeat {repeat}"));
            let config = base.with_alpha(alpha).with_seed(repeat);
            let audit = run_context(&tensors, model, &config, args.probe_steps, repeat)?;
            log.append(std::slice::from_ref(&audit))?;
            audits.push(audit);
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    write_sweep_report(&args.out, &alphas, &audits)
}

fn report(args: ReportArgs) -> Result<()> {
    let path = args.out.join("metrics.jsonl");
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {} (is this an `hedge agnostic sweep` directory?)", path.display()))?;
    let audits: Vec<ContextAudit> = text
        .lines()
        .enumerate()
        .map(|(i, l)| serde_json::from_str(l).with_context(|| format!("{} line {}", path.display(), i + 1)))
        .collect::<Result<_>>()?;
    let mut alphas: Vec<f64> = audits.iter().map(|a| a.alpha).collect();
    alphas.sort_by(f64::total_cmp);
    alphas.dedup();
    if alphas.is_empty() {
        bail!("{}: no finished runs", path.display());
    }
    let config: Value = std::fs::read_to_string(args.out.join("config.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null);
    let command = config["command"].as_str().unwrap_or_default().to_string();
    write_sweep_report_with(&args.out, &alphas, &audits, &command)
}

/// The numbers summarised per α, as JSON paths into a `ContextAudit`.
const SUMMARISED: [&str; 11] = [
    "target_accuracy.iid",
    "target_accuracy.balanced",
    "target_accuracy.reversed",
    "worst_group_accuracy",
    "protected_head_accuracy",
    "probe_accuracy.linear",
    "probe_accuracy.mlp",
    "probe_within_class_mlp",
    "probe_mlp.mutual_information_bits",
    "flip_rate",
    "mask_share",
];

fn at<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(v, |v, k| v.get(k))
}

fn mean_std(v: &[f64]) -> (f64, f64) {
    let n = v.len().max(1) as f64;
    let m = v.iter().sum::<f64>() / n;
    let var = if v.len() > 1 { v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0) } else { 0.0 };
    (m, var.sqrt())
}

fn write_sweep_report(out: &std::path::Path, alphas: &[f64], audits: &[ContextAudit]) -> Result<()> {
    write_sweep_report_with(out, alphas, audits, &crate::hib::command_line())
}

fn write_sweep_report_with(
    out: &std::path::Path,
    alphas: &[f64],
    audits: &[ContextAudit],
    command: &str,
) -> Result<()> {
    let mut by_alpha = serde_json::Map::new();
    let mut stats: Vec<Vec<(f64, f64)>> = vec![Vec::new(); SUMMARISED.len()];
    for &alpha in alphas {
        let runs: Vec<Value> =
            audits.iter().filter(|a| a.alpha == alpha).map(serde_json::to_value).collect::<Result<_, _>>()?;
        let mut entry = json!({});
        for (k, path) in SUMMARISED.iter().enumerate() {
            let values: Vec<f64> = runs.iter().filter_map(|r| at(r, path).and_then(Value::as_f64)).collect();
            let (m, s) = mean_std(&values);
            stats[k].push((m, s));
            // Nest "a.b" as {"a": {"b": {...}}}, the summary shape.
            let mut slot = &mut entry;
            for key in path.split('.') {
                slot = slot.as_object_mut().expect("object").entry(key).or_insert(json!({}));
            }
            *slot = json!({"mean": m, "std": s});
        }
        let within_at_chance = audits.iter().filter(|a| a.alpha == alpha && a.probe_within_class_at_chance).count();
        let mlp_at_chance = audits.iter().filter(|a| a.alpha == alpha && a.probe_mlp.at_chance).count();
        entry["probe_mlp_at_chance_runs"] = json!(mlp_at_chance);
        entry["probe_within_class_at_chance_runs"] = json!(within_at_chance);
        entry["runs"] = json!(runs.len());
        by_alpha.insert(format!("{alpha:.1}"), entry);
    }
    let summary = json!({ "protected_chance": 0.5, "alphas": by_alpha });
    hedge_data::write_atomic(&out.join("summary.json"), serde_json::to_string_pretty(&summary)?.as_bytes())?;
    let mut md = String::from(
        "Context-MNIST, mean ± std over repeats. Target: digit ≥ 5; protected: background (chance 0.5).\n\n\
         | α | IID | balanced | reversed | worst group | G_p | linear probe | MLP probe | MLP probe within class | MI bits (MLP) | flip rate | mask share |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for (i, &alpha) in alphas.iter().enumerate() {
        md.push_str(&format!("| {alpha:.1} |"));
        for s in &stats {
            let (m, sd) = s[i];
            md.push_str(&format!(" {m:.3} ± {sd:.3} |"));
        }
        md.push('\n');
    }
    let runs = |alpha: f64| audits.iter().filter(|a| a.alpha == alpha).count();
    md.push_str(&format!(
        "\nRuns per α: {}.\n\nCommand: `{command}`\n",
        alphas.iter().map(|&a| format!("{a:.1}: {}", runs(a))).collect::<Vec<_>>().join(", ")
    ));
    hedge_data::write_atomic(&out.join("table.md"), md.as_bytes())?;
    let curve = |k: usize, name: &str| -> crate::bayes_plots::MeanCurve {
        (name.to_string(), alphas.iter().zip(&stats[k]).map(|(&a, &(m, s))| (a, m, s)).collect())
    };
    crate::bayes_plots::curves_with_error(
        &out.join("accuracy_vs_alpha.png"),
        &[
            curve(0, "G_y, IID test"),
            curve(1, "G_y, balanced test"),
            curve(2, "G_y, reversed test"),
            curve(4, "G_p (background)"),
        ],
        "α",
        "accuracy (mean ± std over repeats)",
        "Context-MNIST: both classifiers vs α",
    )?;
    let chance: crate::bayes_plots::MeanCurve = ("chance".into(), alphas.iter().map(|&a| (a, 0.5, 0.0)).collect());
    crate::bayes_plots::curves_with_error(
        &out.join("probe_vs_alpha.png"),
        &[curve(5, "linear probe"), curve(6, "MLP probe"), curve(7, "MLP probe within class"), chance],
        "α",
        "probe accuracy at the background (mean ± std)",
        "Context-MNIST: fresh probes on frozen features vs α",
    )?;
    print!("{md}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alpha_grids_parse_and_bad_ones_are_refused() {
        assert_eq!(parse_alphas("0:1:0.1").unwrap().len(), 11);
        assert_eq!(parse_alphas("0:1:0.1").unwrap()[3], 0.3);
        assert_eq!(parse_alphas("0, 0.5,1").unwrap(), vec![0.0, 0.5, 1.0]);
        for bad in ["0:1", "0:2:0.5", "1:0:0.1", "a,b", "0:1:0", ""] {
            assert!(parse_alphas(bad).is_err(), "{bad}");
        }
    }
}
