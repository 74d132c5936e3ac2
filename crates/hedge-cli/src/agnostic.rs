//! `hedge agnostic …`: concept-agnostic networks (gradient reversal) and their audit.

use std::path::PathBuf;

use anyhow::{anyhow, bail, Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use hedge_agnostic::audit::activation_maps;
use hedge_agnostic::domain::{run_domain, DomainTensors};
use hedge_agnostic::experiment::{cross_domain, run_context, ContextTensors, CrossDomainPoint, ImageSet};
use hedge_agnostic::fairness::{run_tabular, TabularTensors};
use hedge_agnostic::{Adversary, AgnosticNet, ExtractorKind, ModelConfig, Objective, TrainConfig};
use hedge_data::{Adult, Backgrounds, ContextMnistConfig, ContextSet, Mnist};
use rand::SeedableRng;
use serde_json::{json, Value};
use tch::Tensor;

#[derive(Subcommand)]
pub enum AgnosticCommand {
    /// Trains one network per α and repeat and audits each. context-mnist: target accuracy on
    /// IID, balanced and reversed tests, G_p, fresh probes, flip rate, mask share, activation
    /// maps; mnist-m: Ganin et al.'s DANN (α = λ's final value, 0 = source only), digit accuracy
    /// on MNIST and MNIST-M, domain probes; adult: income accuracy, parity and odds gaps, sex
    /// probes. Writes config.json, metrics.jsonl, summary.json, table.md, PNGs, checkpoints/.
    Sweep(SweepArgs),
    /// Rebuilds summary.json, table.md and the figures from a sweep directory's metrics.jsonl
    /// (for example after an interrupted sweep).
    Report(ReportArgs),
    /// The paper's Experiment 1 on Context-MNIST: a CNN trained on the target and one trained on
    /// the background, each scored on both test sets during training (Fig. 2 analogue).
    Exp1(Exp1Args),
}

#[derive(Args)]
pub struct ReportArgs {
    /// A directory written by `hedge agnostic sweep`.
    #[arg(long)]
    out: PathBuf,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq, Debug)]
pub enum DatasetArg {
    ContextMnist,
    MnistM,
    Adult,
}

impl DatasetArg {
    fn name(self) -> &'static str {
        match self {
            DatasetArg::ContextMnist => "context-mnist",
            DatasetArg::MnistM => "mnist-m",
            DatasetArg::Adult => "adult",
        }
    }
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
    /// start:end:step, or a comma-separated list. For mnist-m, α is DANN's λ at the end of the
    /// ramp (Ganin et al.: 1; 0 trains on the source only).
    #[arg(long, default_value = "0:1:0.1")]
    alphas: String,
    /// Networks per α (different initialisation and batches).
    #[arg(long, default_value_t = 3)]
    repeats: u64,
    /// context-mnist: background–target agreement in the target-labelled training set and the IID test.
    #[arg(long, default_value_t = 0.95)]
    rho: f64,
    /// Training images: context-mnist target-labelled set (default 10,000); mnist-m MNIST
    /// digits and as many MNIST-M images (default 60,000).
    #[arg(long)]
    target_train: Option<usize>,
    /// context-mnist: context-labelled training images.
    #[arg(long, default_value_t = 10_000)]
    context_train: usize,
    /// Test images per test set (context-mnist default 4,000; mnist-m 10,000).
    #[arg(long)]
    test: Option<usize>,
    /// SGD steps per network (default: context-mnist 1,500, mnist-m 12,000, adult 4,000).
    #[arg(long)]
    steps: Option<usize>,
    /// Examples per step from each training set.
    #[arg(long, default_value_t = 64)]
    batch: i64,
    /// How G_f hides the concept: the paper's gradient reversal, or a confusion loss.
    #[arg(long, value_enum, default_value = "reversal")]
    adversary: AdversaryArg,
    /// G_p updates per feature update (1: plain GRL).
    #[arg(long, default_value_t = 1)]
    adversary_steps: usize,
    /// Keep α fixed instead of ramping it up.
    #[arg(long)]
    no_ramp: bool,
    /// Leaky ReLU slope in G_f (0: Ganin's ReLU). A leaky G_f cannot collapse to all-dead units.
    #[arg(long, default_value_t = 0.0)]
    negative_slope: f64,
    /// Adam steps per probe.
    #[arg(long, default_value_t = 300)]
    probe_steps: usize,
    /// Intra-op threads for libtorch (0: its default).
    #[arg(long, default_value_t = 0)]
    threads: usize,
    #[arg(long)]
    out: PathBuf,
    /// Replace the files an earlier run wrote in --out (without it, a folder holding files is refused).
    #[arg(long)]
    overwrite: bool,
}

#[derive(Args)]
pub struct Exp1Args {
    /// Background–target agreement in the target-labelled training set and the target test.
    #[arg(long, default_value_t = 0.95)]
    rho: f64,
    #[arg(long, default_value_t = 10_000)]
    target_train: usize,
    #[arg(long, default_value_t = 10_000)]
    context_train: usize,
    /// Images in the target test and in the background-only test.
    #[arg(long, default_value_t = 4_000)]
    test: usize,
    #[arg(long, default_value_t = 1500)]
    steps: usize,
    /// Evaluate both models every this many steps.
    #[arg(long, default_value_t = 100)]
    every: usize,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    #[arg(long, default_value_t = 0)]
    threads: usize,
    #[arg(long)]
    out: PathBuf,
    /// Replace the files an earlier run wrote in --out (without it, a folder holding files is refused).
    #[arg(long)]
    overwrite: bool,
}

pub fn run(command: AgnosticCommand) -> Result<()> {
    match command {
        AgnosticCommand::Sweep(args) => sweep(args),
        AgnosticCommand::Report(args) => report(args),
        AgnosticCommand::Exp1(args) => exp1(args),
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

/// One finished network of any dataset: its audit as JSON (with an `alpha` field).
type Audit = Value;

fn sweep(args: SweepArgs) -> Result<()> {
    crate::set_threads(args.threads);
    let alphas = parse_alphas(&args.alphas)?;
    if args.repeats == 0 {
        bail!("--repeats must be ≥ 1");
    }
    let adversary = match args.adversary {
        AdversaryArg::Reversal => Adversary::Reversal,
        AdversaryArg::Confusion => Adversary::Confusion,
    };
    let default_steps = match args.dataset {
        DatasetArg::ContextMnist => 1500,
        DatasetArg::MnistM => 12_000,
        DatasetArg::Adult => 4000,
    };
    let base = TrainConfig {
        ramp: !args.no_ramp,
        steps: args.steps.unwrap_or(default_steps),
        batch: args.batch,
        objective: if args.dataset == DatasetArg::MnistM { Objective::Dann } else { Objective::Paper },
        adversary,
        adversary_steps: args.adversary_steps,
        ..Default::default()
    };
    base.with_alpha(alphas[0]).check()?;
    let (data, data_json, model) = prepare(&args)?;
    model.check()?;
    hedge_data::prepare_output_dir(&args.out, args.overwrite)?;
    std::fs::create_dir_all(args.out.join("checkpoints"))
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    let config_json = json!({ "command": crate::command_line(), "dataset": args.dataset.name(), "data": data_json,
        "model": model, "train": base, "alphas": alphas, "repeats": args.repeats,
        "probe_steps": args.probe_steps, "threads": tch::get_num_threads() });
    hedge_data::write_atomic(&args.out.join("config.json"), serde_json::to_string_pretty(&config_json)?.as_bytes())?;
    let bar = crate::runlog::runs_bar(alphas.len() as u64 * args.repeats, "networks");
    let mut audits: Vec<Audit> = Vec::new();
    let mut log = crate::runlog::JsonLines::new(&args.out.join("metrics.jsonl"));
    // Activation maps of repeat 0 on a fixed handful of balanced-test images (Context-MNIST).
    let shown = match &data {
        Prepared::Context(c) => Some(shown_images(&c.test_balanced)),
        _ => None,
    };
    let mut maps: Vec<(f64, Tensor)> = Vec::new();
    for repeat in 0..args.repeats {
        for &alpha in &alphas {
            bar.set_message(format!("α = {alpha}, repeat {repeat}"));
            let config = base.with_alpha(alpha).with_seed(repeat);
            let (audit, net) = data.run(model, &config, args.probe_steps, repeat)?;
            if repeat == 0 {
                net.save(&args.out.join("checkpoints"), &format!("alpha-{}", alpha_key(alpha)))?;
                if let Some(m) = shown.as_ref().and_then(|x| activation_maps(&net, x)) {
                    maps.push((alpha, m));
                }
            }
            log.append(std::slice::from_ref(&audit))?;
            audits.push(audit);
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    if let (Some(x), false) = (&shown, maps.is_empty()) {
        crate::agnostic_plots::write_activation_maps(&args.out, x, &maps)?;
    }
    write_sweep_report(&args.out, args.dataset, &alphas, &audits, &crate::command_line())
}

/// A dataset loaded for a sweep, as tensors.
enum Prepared {
    Context(ContextTensors),
    Domain(DomainTensors),
    Tabular(TabularTensors),
}

impl Prepared {
    /// Trains and audits one network; the audit as JSON, and the network.
    fn run(
        &self,
        model: ModelConfig,
        config: &TrainConfig,
        probe_steps: usize,
        repeat: u64,
    ) -> Result<(Audit, AgnosticNet)> {
        let (audit, net) = match self {
            Prepared::Context(d) => {
                let (a, net) = run_context(d, model, config, probe_steps, repeat)?;
                (serde_json::to_value(a)?, net)
            }
            Prepared::Domain(d) => {
                let (a, net) = run_domain(d, model, config, probe_steps, repeat)?;
                (serde_json::to_value(a)?, net)
            }
            Prepared::Tabular(d) => {
                let (a, net) = run_tabular(d, model, config, probe_steps, repeat)?;
                (serde_json::to_value(a)?, net)
            }
        };
        Ok((audit, net))
    }
}

/// Loads the sweep's dataset from `$HEDGE_DATA_DIR`: the tensors, their description for
/// config.json, and the network shape that fits them.
fn prepare(args: &SweepArgs) -> Result<(Prepared, Value, ModelConfig)> {
    let dir = hedge_data::data_dir()?;
    let model = ModelConfig::default().with_negative_slope(args.negative_slope);
    Ok(match args.dataset {
        DatasetArg::ContextMnist => {
            let mnist = Mnist::load(&dir.join("mnist"))?;
            let backgrounds = Backgrounds::load(&dir.join("bsds500"))?;
            let data_config = ContextMnistConfig {
                rho: args.rho,
                target_train: args.target_train.unwrap_or(10_000),
                context_train: args.context_train,
                test: args.test.unwrap_or(4000),
                ..Default::default()
            };
            let data = data_config.build(&mnist, &backgrounds)?;
            let described = json!({ "config": data_config, "measured_agreement": {
                "target_train": data.target_train.agreement(), "context_train": data.context_train.agreement(),
                "test_iid": data.test_iid.agreement(), "test_balanced": data.test_balanced.agreement(),
                "test_reversed": data.test_reversed.agreement(), "probe_train": data.probe_train.agreement(),
                "probe_test": data.probe_test.agreement() } });
            (Prepared::Context(ContextTensors::new(&data)), described, model)
        }
        DatasetArg::MnistM => {
            let mnist = Mnist::load(&dir.join("mnist"))?;
            let backgrounds = Backgrounds::load(&dir.join("bsds500"))?;
            let (train, test) = (args.target_train.unwrap_or(60_000), args.test.unwrap_or(10_000));
            let domain = DomainTensors::build(&mnist, &backgrounds, train, test, 0);
            let described = json!({ "source": "MNIST train (grey in 3 channels)", "target": "MNIST-M from the same digits, BSDS500 crops, seed 0",
                "train_images_per_domain": domain.source_x.size()[0], "test_images_per_domain": domain.source_test_x.size()[0] });
            (Prepared::Domain(domain), described, model.with_target_classes(10))
        }
        DatasetArg::Adult => {
            let adult = Adult::load(&dir.join("adult"))?;
            let described = json!({ "train_rows": adult.train.len(), "test_rows": adult.test.len(),
                "features": adult.features(), "protected": "sex (Female = 1), removed from the inputs" });
            let mlp = ExtractorKind::Mlp { inputs: adult.features() as i64, hidden: 100 };
            (Prepared::Tabular(TabularTensors::new(&adult, 0)), described, model.with_extractor(mlp))
        }
    })
}

/// Four plain and four photograph images from the start of a balanced test set.
fn shown_images(set: &ImageSet) -> Tensor {
    let pick = |a: i64| set.protected.eq(a).nonzero().squeeze_dim(1).narrow(0, 0, 4);
    set.x.index_select(0, &Tensor::cat(&[pick(0), pick(1)], 0))
}

/// The summary key of an α: one decimal when that is exact ("0.3"), else the full value.
fn alpha_key(alpha: f64) -> String {
    if ((alpha * 10.0).round() / 10.0 - alpha).abs() < 1e-12 {
        format!("{alpha:.1}")
    } else {
        format!("{alpha}")
    }
}

fn report(args: ReportArgs) -> Result<()> {
    let path = args.out.join("metrics.jsonl");
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {} (is this an `hedge agnostic sweep` directory?)", path.display()))?;
    let audits: Vec<Audit> = text
        .lines()
        .enumerate()
        .map(|(i, l)| serde_json::from_str(l).with_context(|| format!("{} line {}", path.display(), i + 1)))
        .collect::<Result<_>>()?;
    let mut alphas: Vec<f64> = audits.iter().filter_map(|a| a["alpha"].as_f64()).collect();
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
    let dataset = match config["dataset"].as_str().unwrap_or("context-mnist") {
        "mnist-m" => DatasetArg::MnistM,
        "adult" => DatasetArg::Adult,
        _ => DatasetArg::ContextMnist,
    };
    crate::agnostic_plots::redraw_activation_maps(&args.out)?;
    write_sweep_report(&args.out, dataset, &alphas, &audits, &command)
}

/// What a sweep's report shows for one dataset.
struct Schema {
    /// The first line of table.md.
    intro: &'static str,
    /// (JSON path into an audit, column title), summarised as mean ± std per α.
    columns: &'static [(&'static str, &'static str)],
    /// Curves of the accuracy figure: (column index, label).
    accuracy_curves: &'static [(usize, &'static str)],
    accuracy_title: &'static str,
    /// Curves of the probe figure.
    probe_curves: &'static [(usize, &'static str)],
    probe_title: &'static str,
    /// Chance accuracy at the protected concept when fixed by design (balanced sets); otherwise
    /// the probes' majority-class rate.
    chance: Option<f64>,
    /// Boolean audit paths counted per α ("runs where … holds").
    counts: &'static [(&'static str, &'static str)],
}

fn schema(dataset: DatasetArg) -> Schema {
    match dataset {
        DatasetArg::ContextMnist => Schema {
            intro: "Context-MNIST, mean ± std over repeats. Target: digit ≥ 5; protected: background (chance 0.5).",
            columns: &[
                ("target_accuracy.iid", "IID"),
                ("target_accuracy.balanced", "balanced"),
                ("target_accuracy.reversed", "reversed"),
                ("worst_group_accuracy", "worst group"),
                ("protected_head_accuracy", "G_p"),
                ("probe_accuracy.linear", "linear probe"),
                ("probe_accuracy.mlp", "MLP probe"),
                ("probe_within_class_mlp", "MLP probe within class"),
                ("probe_mutual_information_bits", "MI bits (best probe)"),
                ("flip_rate", "flip rate"),
                ("mask_share", "mask share"),
            ],
            accuracy_curves: &[
                (0, "G_y, IID test"),
                (1, "G_y, balanced test"),
                (2, "G_y, reversed test"),
                (4, "G_p (background)"),
            ],
            accuracy_title: "Context-MNIST: both classifiers vs α",
            probe_curves: &[(5, "linear probe"), (6, "MLP probe"), (7, "MLP probe within class")],
            probe_title: "Context-MNIST: fresh probes on frozen features vs α",
            chance: Some(0.5),
            counts: &[
                ("probe_mlp_at_chance_runs", "probe_mlp.at_chance"),
                ("probe_within_class_at_chance_runs", "probe_within_class_at_chance"),
            ],
        },
        DatasetArg::MnistM => Schema {
            intro: "MNIST → MNIST-M (DANN, Ganin et al. 2016), mean ± std over repeats. α = λ at the end of the ramp \
                    (0: source only). Ganin et al.: MNIST-M accuracy 0.5225 source only, 0.7666 DANN. \
                    Protected: domain (chance 0.5).",
            columns: &[
                ("target_accuracy.mnist", "MNIST test"),
                ("target_accuracy.mnist_m", "MNIST-M test"),
                ("protected_head_accuracy", "G_p (domain)"),
                ("probe_accuracy.linear", "linear probe"),
                ("probe_accuracy.mlp", "MLP probe"),
                ("probe_mutual_information_bits", "MI bits (best probe)"),
            ],
            accuracy_curves: &[(0, "G_y, MNIST test"), (1, "G_y, MNIST-M test"), (2, "G_p (domain)")],
            accuracy_title: "MNIST → MNIST-M: both classifiers vs λ",
            probe_curves: &[(3, "linear probe"), (4, "MLP probe")],
            probe_title: "MNIST → MNIST-M: fresh domain probes vs λ",
            chance: Some(0.5),
            counts: &[("probe_mlp_at_chance_runs", "probe_mlp.at_chance")],
        },
        DatasetArg::Adult => Schema {
            intro: "Adult income, mean ± std over repeats. Target: income > 50K; protected: sex (removed from the \
                    inputs; chance = the male share of the probe-test rows). AIF360 adversarial debiasing: accuracy \
                    0.805 → 0.792, statistical parity difference −0.221 → −0.095.",
            columns: &[
                ("accuracy", "accuracy"),
                ("worst_group_accuracy", "worst group"),
                ("demographic_parity_difference", "parity difference"),
                ("equalised_odds_difference", "equalised-odds difference"),
                ("positive_rate", "rate ŷ = 1"),
                ("protected_head_accuracy", "G_p (sex)"),
                ("probe_accuracy.linear", "linear probe"),
                ("probe_accuracy.mlp", "MLP probe"),
                ("probe_mutual_information_bits", "MI bits (best probe)"),
            ],
            accuracy_curves: &[(0, "G_y accuracy"), (5, "G_p (sex)"), (2, "parity difference"), (3, "equalised odds")],
            accuracy_title: "Adult: accuracy, G_p and fairness gaps vs α",
            probe_curves: &[(6, "linear probe"), (7, "MLP probe")],
            probe_title: "Adult: fresh probes at sex vs α",
            chance: None,
            counts: &[("probe_mlp_at_chance_runs", "probe_mlp.at_chance")],
        },
    }
}

fn at<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(v, |v, k| v.get(k))
}

/// A summarised number of one run: a JSON path, or `probe_mutual_information_bits`, the larger
/// of the two probes' information bounds (each probe's bound is valid; an overconfident probe
/// gives a looser one).
fn number(run: &Value, path: &str) -> Option<f64> {
    if path == "probe_mutual_information_bits" {
        let bits = |p: &str| at(run, p).and_then(Value::as_f64);
        return match (bits("probe_linear.mutual_information_bits"), bits("probe_mlp.mutual_information_bits")) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
    }
    at(run, path).and_then(Value::as_f64)
}

fn mean_std(v: &[f64]) -> (f64, f64) {
    let n = v.len().max(1) as f64;
    let m = v.iter().sum::<f64>() / n;
    let var = if v.len() > 1 { v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0) } else { 0.0 };
    (m, var.sqrt())
}

fn write_sweep_report(
    out: &std::path::Path,
    dataset: DatasetArg,
    alphas: &[f64],
    audits: &[Audit],
    command: &str,
) -> Result<()> {
    let schema = schema(dataset);
    let mut by_alpha = serde_json::Map::new();
    let mut stats: Vec<Vec<(f64, f64)>> = vec![Vec::new(); schema.columns.len()];
    let of_alpha = |alpha: f64| audits.iter().filter(move |a| a["alpha"].as_f64() == Some(alpha));
    for &alpha in alphas {
        let mut entry = json!({});
        for (k, (path, _)) in schema.columns.iter().enumerate() {
            let values: Vec<f64> = of_alpha(alpha).filter_map(|r| number(r, path)).collect();
            let (m, s) = mean_std(&values);
            stats[k].push((m, s));
            // Nest "a.b" as {"a": {"b": {...}}}, the summary shape.
            let mut slot = &mut entry;
            for key in path.split('.') {
                slot = slot.as_object_mut().expect("object").entry(key).or_insert(json!({}));
            }
            *slot = json!({"mean": m, "std": s});
        }
        for (key, path) in schema.counts {
            entry[*key] = json!(of_alpha(alpha).filter(|r| at(r, path) == Some(&Value::Bool(true))).count());
        }
        entry["runs"] = json!(of_alpha(alpha).count());
        by_alpha.insert(alpha_key(alpha), entry);
    }
    let chance = schema
        .chance
        .or_else(|| audits.first().and_then(|a| at(a, "probe_mlp.chance")).and_then(Value::as_f64))
        .unwrap_or(0.5);
    let summary = json!({ "dataset": dataset.name(), "protected_chance": chance, "alphas": by_alpha });
    hedge_data::write_atomic(&out.join("summary.json"), serde_json::to_string_pretty(&summary)?.as_bytes())?;
    let mut md = format!("{}\n\n| α |", schema.intro);
    for (_, title) in schema.columns {
        md.push_str(&format!(" {title} |"));
    }
    md.push_str(&format!("\n|---|{}\n", "---|".repeat(schema.columns.len())));
    for (i, &alpha) in alphas.iter().enumerate() {
        md.push_str(&format!("| {} |", alpha_key(alpha)));
        for s in &stats {
            let (m, sd) = s[i];
            md.push_str(&format!(" {m:.3} ± {sd:.3} |"));
        }
        md.push('\n');
    }
    md.push_str(&format!(
        "\nRuns per α: {}.\n\nCommand: `{command}`\n",
        alphas.iter().map(|&a| format!("{}: {}", alpha_key(a), of_alpha(a).count())).collect::<Vec<_>>().join(", ")
    ));
    hedge_data::write_atomic(&out.join("table.md"), md.as_bytes())?;
    let curve = |k: usize, name: &str| -> hedge_plot::MeanCurve {
        (name.to_string(), alphas.iter().zip(&stats[k]).map(|(&a, &(m, s))| (a, m, s)).collect())
    };
    let x_label = if dataset == DatasetArg::MnistM { "λ (DANN)" } else { "α" };
    let accuracy: Vec<_> = schema.accuracy_curves.iter().map(|&(k, name)| curve(k, name)).collect();
    hedge_plot::curves_with_error(
        &out.join("accuracy_vs_alpha.png"),
        &accuracy,
        x_label,
        "mean ± std over repeats",
        schema.accuracy_title,
    )?;
    let mut probes: Vec<_> = schema.probe_curves.iter().map(|&(k, name)| curve(k, name)).collect();
    probes.push(("chance".into(), alphas.iter().map(|&a| (a, chance, 0.0)).collect()));
    hedge_plot::curves_with_error(
        &out.join("probe_vs_alpha.png"),
        &probes,
        x_label,
        "probe accuracy at the protected concept (mean ± std)",
        schema.probe_title,
    )?;
    print!("{md}");
    Ok(())
}

fn exp1(args: Exp1Args) -> Result<()> {
    crate::set_threads(args.threads);
    if args.every == 0 || args.steps == 0 {
        bail!("--steps and --every must be ≥ 1");
    }
    let dir = hedge_data::data_dir()?;
    let mnist = Mnist::load(&dir.join("mnist"))?;
    let backgrounds = Backgrounds::load(&dir.join("bsds500"))?;
    let data_config = ContextMnistConfig {
        rho: args.rho,
        target_train: args.target_train,
        context_train: args.context_train,
        test: args.test,
        seed: args.seed,
        ..Default::default()
    };
    let data = data_config.build(&mnist, &backgrounds)?;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(args.seed.wrapping_add(7));
    let context_test = ImageSet::new(&ContextSet::backgrounds_only(args.test, &backgrounds, &mut rng));
    let tensors = ContextTensors::new(&data);
    let model = ModelConfig::default();
    let train = TrainConfig { steps: args.steps, seed: args.seed, ..Default::default() };
    hedge_data::prepare_output_dir(&args.out, args.overwrite)?;
    let config_json = json!({ "command": crate::command_line(), "data": data_config,
        "context_test": "backgrounds without a digit: half plain, half BSDS500 crops", "model": model, "train": train,
        "every": args.every, "threads": tch::get_num_threads() });
    hedge_data::write_atomic(&args.out.join("config.json"), serde_json::to_string_pretty(&config_json)?.as_bytes())?;
    let spinner = crate::runlog::runs_bar(2, "networks");
    spinner.set_message("target model, then context model");
    let points = cross_domain(&tensors, &context_test, model, &train, args.every)?;
    spinner.finish_and_clear();
    let mut log = crate::runlog::JsonLines::new(&args.out.join("metrics.jsonl"));
    log.append(&points)?;
    let last = |name: &str| points.iter().rev().find(|p| p.model == name).expect("both models evaluated");
    let (t, c) = (last("target"), last("context"));
    let md = format!(
        "Experiment 1 on Context-MNIST (ρ = {}): two independent CNNs, final accuracies after {} steps.\n\n\
         | model | target test (digit ≥ 5, IID) | context test (background, no digit) |\n|---|---|---|\n\
         | trained on the target | {:.3} | {:.3} |\n| trained on the context | {:.3} | {:.3} |\n\n\
         A target model that scores well above 0.5 on images without a digit has learned the background.\n\n\
         Paper (animals / places): target model 0.92 / 0.79, context model 0.88 / 0.91.\n\nCommand: `{}`\n",
        args.rho,
        args.steps,
        t.target_test,
        t.context_test,
        c.target_test,
        c.context_test,
        crate::command_line()
    );
    hedge_data::write_atomic(&args.out.join("table.md"), md.as_bytes())?;
    let series = |name: &str, test: fn(&CrossDomainPoint) -> f64, label: &str| -> hedge_plot::MeanCurve {
        let v = points.iter().filter(|p| p.model == name).map(|p| (p.step as f64, test(p), 0.0)).collect();
        (label.to_string(), v)
    };
    hedge_plot::curves_with_error(
        &args.out.join("cross_domain.png"),
        &[
            series("target", |p| p.target_test, "target model on the target test"),
            series("target", |p| p.context_test, "target model on the context test"),
            series("context", |p| p.context_test, "context model on the context test"),
            series("context", |p| p.target_test, "context model on the target test"),
        ],
        "SGD step",
        "accuracy",
        "Experiment 1: each model on both test sets (Fig. 2 analogue)",
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
