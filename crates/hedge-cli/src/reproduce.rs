//! `hedge hib reproduce`: trains point, MoG-1 and MoG-2 embeddings, evaluates them, and writes
//! the paper's Tables 1 and 2 (and optionally 5–7 and Appendix B) with the paper's numbers beside
//! ours, a summary.json and the figures. Finished runs are reused, unfinished ones resumed, so
//! an interrupted reproduction continues where it stopped.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use clap::Args;
use hedge_data::{Corruption, NDigitSplit};
use hedge_embed::{
    embed_dataset, load_model, parse_device, EmbedOptions, EmbeddedSet, HibConfig, LossKind, ModelKind, RunDir,
};
use serde_json::{json, Value};
use tracing::info;

use crate::figures;
use crate::hib::{embed_twins, evaluate_run, load_split, new_run, run_training, EvalSettings};

#[derive(Args)]
pub struct ReproduceArgs {
    /// Digits per image (N).
    #[arg(long, default_value_t = 2)]
    digits: usize,
    /// Embedding dimension (D).
    #[arg(long, default_value_t = 2)]
    dim: usize,
    /// Training steps per model.
    #[arg(long, default_value_t = 20_000)]
    steps: usize,
    /// Seeds per model (results are averaged).
    #[arg(long, default_value_t = 1)]
    seeds: u64,
    /// Repeats of the sampling-dependent evaluation.
    #[arg(long, default_value_t = 10)]
    repeats: usize,
    /// Adam learning rate.
    #[arg(long)]
    lr: Option<f64>,
    /// Learning-rate schedule.
    #[arg(long, value_enum, default_value = "constant")]
    lr_schedule: crate::hib::ScheduleArg,
    /// Grouped batches CLASSESxIMAGES (e.g. 32x8) instead of the paper's 128 independent pairs.
    #[arg(long, value_name = "CLASSESxIMAGES")]
    group: Option<String>,
    /// Also train MoG-1 with beta = 0 (Table 5).
    #[arg(long)]
    beta_sweep: bool,
    /// Also write Tables 6 and 7 (plurality KNN, gallery/probe variants).
    #[arg(long)]
    appendix_g: bool,
    /// Also train point embeddings with the hard contrastive loss at these margins (Appendix B).
    #[arg(long)]
    appendix_b: bool,
    /// Also evaluate every kept checkpoint (each 1,000 steps) and plot quality against steps.
    #[arg(long)]
    curves: bool,
    #[arg(long, default_value = "cpu")]
    device: String,
    #[arg(long, default_value_t = 0)]
    threads: usize,
    /// Output folder, e.g. results/hib/n2-d2.
    #[arg(long)]
    out: PathBuf,
}

/// Margins of the Appendix B comparison.
const MARGINS: [f64; 4] = [0.5, 1.0, 2.0, 4.0];

/// Table 1 and 2 values of the ICLR 2019 paper for (N, D): per model, verification AP and KNN
/// accuracy (clean, corrupt) and the τ correlations (MoG only).
fn paper(digits: usize, dim: usize) -> Option<Value> {
    let col = match (digits, dim) {
        (2, 2) => 0,
        (2, 3) => 1,
        (3, 2) => 2,
        (3, 3) => 3,
        _ => return None,
    };
    // Table 1: rows AP clean, AP corrupt, KNN clean, KNN corrupt; 4 (N, D) blocks of point/MoG-1/MoG-2.
    const T1: [[f64; 12]; 4] = [
        [0.987, 0.989, 0.990, 0.996, 0.996, 0.996, 0.978, 0.981, 0.976, 0.987, 0.989, 0.991],
        [0.880, 0.907, 0.912, 0.913, 0.926, 0.932, 0.886, 0.899, 0.904, 0.901, 0.922, 0.925],
        [0.871, 0.879, 0.888, 0.942, 0.953, 0.939, 0.554, 0.591, 0.540, 0.795, 0.770, 0.766],
        [0.583, 0.760, 0.757, 0.874, 0.909, 0.885, 0.274, 0.350, 0.351, 0.522, 0.555, 0.598],
    ];
    // Table 2: rows AP corr clean, AP corr corrupt, KNN corr clean, KNN corr corrupt; MoG-1/MoG-2.
    const T2: [[f64; 8]; 4] = [
        [0.74, 0.43, 0.68, 0.48, 0.63, 0.28, 0.51, 0.39],
        [0.81, 0.79, 0.86, 0.87, 0.82, 0.76, 0.85, 0.79],
        [0.71, 0.57, 0.72, 0.47, 0.76, 0.29, 0.74, 0.54],
        [0.47, 0.43, 0.55, 0.52, 0.49, 0.50, 0.67, 0.34],
    ];
    let model = |m: usize| {
        let t1 = |row: usize| T1[row][3 * col + m];
        let mut v = json!({
            "verification_ap": {"clean": t1(0), "corrupt": t1(1)},
            "knn_accuracy": {"clean": t1(2), "corrupt": t1(3)},
        });
        if m > 0 {
            let t2 = |row: usize| T2[row][2 * col + m - 1];
            v["tau_ap"] = json!({"clean": t2(0), "corrupt": t2(1)});
            v["tau_knn"] = json!({"clean": t2(2), "corrupt": t2(3)});
        }
        v
    };
    Some(json!({"point": model(0), "mog1": model(1), "mog2": model(2)}))
}

/// One model of the reproduction.
struct Variant {
    key: String,
    label: String,
    config: HibConfig,
}

fn variants(args: &ReproduceArgs) -> Result<Vec<Variant>> {
    let base = HibConfig::default().with_digits(args.digits).with_dim(args.dim).with_steps(args.steps).with_beta(1e-4);
    let base = match &args.group {
        Some(spec) => crate::hib::with_group(base, spec)?,
        None => base,
    };
    let base = match args.lr {
        Some(lr) => base.with_learning_rate(lr),
        None => base,
    }
    .with_lr_schedule(args.lr_schedule.into());
    let mut v = vec![
        Variant { key: "point".into(), label: "point".into(), config: base.clone().with_model(ModelKind::Point) },
        Variant { key: "mog1".into(), label: "MoG-1".into(), config: base.clone().with_model(ModelKind::Gaussian) },
        Variant {
            key: "mog2".into(),
            label: "MoG-2".into(),
            config: base.clone().with_model(ModelKind::Mog).with_components(2),
        },
    ];
    if args.beta_sweep {
        v.push(Variant {
            key: "mog1-beta0".into(),
            label: "MoG-1, beta = 0".into(),
            config: base.clone().with_model(ModelKind::Gaussian).with_beta(0.0),
        });
    }
    if args.appendix_b {
        for m in MARGINS {
            v.push(Variant {
                key: format!("point-contrastive-m{m}"),
                label: format!("point, contrastive M = {m}"),
                config: base.clone().with_model(ModelKind::Point).with_loss(LossKind::Contrastive).with_margin(m),
            });
        }
    }
    for variant in &v {
        variant.config.check()?;
    }
    Ok(v)
}

/// Trains (or resumes, or reuses) one run and returns its eval.json.
fn train_and_eval(dir: &Path, config: &HibConfig, device: tch::Device, settings: &EvalSettings) -> Result<Value> {
    let (run, resuming) = if dir.join("config.json").is_file() {
        let run = RunDir::open(dir)?;
        let stored = run.read_config()?.hib;
        let mut want = config.clone();
        want.conv_precision = stored.conv_precision;
        if stored != want {
            bail!("'{}' holds a run with another configuration; remove it or choose another --out", dir.display());
        }
        (run, true)
    } else {
        let mut c = config.clone();
        c.conv_precision = c.conv_precision.resolve(device);
        (new_run(dir, &c, device)?, false)
    };
    let done = run.read_state()?.step >= config.steps;
    if let (true, Ok(text)) = (done, std::fs::read_to_string(run.file("eval.json"))) {
        info!("reusing {}", run.file("eval.json").display());
        return Ok(serde_json::from_str(&text)?);
    }
    if !done {
        let stored = run.read_config()?.hib;
        run_training(&run, &stored, device, resuming && run.read_state()?.step > 0, 1000)?;
    }
    let (_, json) = evaluate_run(&run, None, settings, device)?;
    Ok(json)
}

pub fn run(args: ReproduceArgs) -> Result<()> {
    crate::set_threads(args.threads);
    let device = parse_device(&args.device)?;
    if args.seeds == 0 {
        bail!("--seeds must be at least 1");
    }
    std::fs::create_dir_all(&args.out)?;
    let settings = EvalSettings { repeats: args.repeats, ..Default::default() };
    let started = std::time::Instant::now();
    let mut results: Vec<(Variant, Vec<Value>)> = Vec::new();
    for v in variants(&args)? {
        let mut evals = Vec::new();
        for seed in 0..args.seeds {
            let dir = args.out.join("runs").join(format!("{}-seed{seed}", v.key));
            info!("{}: seed {seed} in {}", v.label, dir.display());
            evals.push(train_and_eval(&dir, &v.config.clone().with_seed(seed), device, &settings)?);
        }
        results.push((v, evals));
    }
    let summary = summarise(&args, &results, started.elapsed().as_secs_f64());
    write(&args.out.join("summary.json"), &(serde_json::to_string_pretty(&summary)? + "\n"))?;
    write(&args.out.join("table1.md"), &table1(&summary))?;
    write(&args.out.join("table2.md"), &table2(&summary))?;
    if args.beta_sweep {
        write(&args.out.join("table5.md"), &table5(&summary))?;
    }
    if args.appendix_g {
        write(&args.out.join("table6.md"), &table67(&results, false))?;
        write(&args.out.join("table7.md"), &table67(&results, true))?;
    }
    if args.appendix_b {
        write(&args.out.join("appendix_b.md"), &appendix_b(&summary))?;
    }
    draw_figures(&args, &results, device)?;
    if args.curves {
        draw_curves(&args, &results, device)?;
    }
    write(&args.out.join("README.md"), &readme(&args, &summary))?;
    println!("{}", table1(&summary));
    println!("{}", table2(&summary));
    println!("results in {}", args.out.display());
    Ok(())
}

fn write(path: &Path, text: &str) -> Result<()> {
    hedge_data::write_atomic(path, text.as_bytes())?;
    Ok(())
}

/// Mean over seeds of `eval[key][variant]`, `None` where undefined.
fn mean_of(evals: &[Value], key: &str, variant: &str) -> Option<f64> {
    let v: Vec<f64> = evals.iter().filter_map(|e| e[key][variant].as_f64()).collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

fn summarise(args: &ReproduceArgs, results: &[(Variant, Vec<Value>)], seconds: f64) -> Value {
    let mut models = serde_json::Map::new();
    for (v, evals) in results {
        let metric =
            |key: &str| json!({"clean": mean_of(evals, key, "clean"), "corrupt": mean_of(evals, key, "corrupt")});
        let train_seconds: Vec<f64> = evals
            .iter()
            .filter_map(|e| e["run"].as_str())
            .filter_map(|r| RunDir::open(Path::new(r)).ok()?.read_state().ok())
            .map(|s| s.seconds)
            .collect();
        models.insert(
            v.key.clone(),
            json!({
                "label": v.label,
                "verification_ap": {
                    "clean": mean_of(evals, "verification_ap", "clean"),
                    "corrupt": mean_of(evals, "verification_ap", "corrupt"),
                    "clean_vs_corrupt": mean_of(evals, "verification_ap", "clean_vs_corrupt"),
                },
                "knn_accuracy": metric("knn_accuracy"),
                "knn_plurality": metric("knn_plurality"),
                "tau_ap": metric("tau_ap"),
                "tau_knn": metric("tau_knn"),
                "ece": evals.iter().filter_map(|e| e["ece"].as_f64()).sum::<f64>() / evals.len() as f64,
                "aurc": evals.iter().filter_map(|e| e["aurc"].as_f64()).sum::<f64>() / evals.len() as f64,
                "seeds": evals.len(),
                "train_seconds": train_seconds,
                "runs": evals.iter().map(|e| e["run"].clone()).collect::<Vec<_>>(),
            }),
        );
    }
    json!({
        "digits": args.digits,
        "dim": args.dim,
        "split": "test_unseen",
        "models": models,
        "paper": paper(args.digits, args.dim),
        "steps": args.steps,
        "seeds": args.seeds,
        "repeats": args.repeats,
        "seconds": seconds,
        "command": crate::hib::command_line(),
    })
}

/// "0.912 (paper 0.880)" or "n/a".
fn cell(summary: &Value, model: &str, key: &str, variant: &str) -> String {
    let ours = summary["models"][model][key][variant].as_f64();
    let paper = summary["paper"][model][key][variant].as_f64();
    match (ours, paper) {
        (Some(o), Some(p)) => format!("{o:.3} ({p:.3})"),
        (Some(o), None) => format!("{o:.3}"),
        _ => "n/a".into(),
    }
}

fn table1(s: &Value) -> String {
    let mut t = format!(
        "Table 1, N = {}, D = {}, test_unseen, ours (paper). KNN: K = 5, majority; corrupt = clean probes against the corrupt gallery.\n\n| | point | MoG-1 | MoG-2 |\n|---|---|---|---|\n",
        s["digits"], s["dim"]
    );
    for (key, name) in [("verification_ap", "Verification AP"), ("knn_accuracy", "KNN accuracy")] {
        for variant in ["clean", "corrupt"] {
            let _ = writeln!(
                t,
                "| {name}, {variant} | {} | {} | {} |",
                cell(s, "point", key, variant),
                cell(s, "mog1", key, variant),
                cell(s, "mog2", key, variant)
            );
        }
    }
    if ["point", "mog1", "mog2"].iter().any(|m| s["models"][m]["verification_ap"]["clean_vs_corrupt"].is_number()) {
        let _ = writeln!(
            t,
            "| Verification AP, clean vs corrupt pairs (not in the paper) | {} | {} | {} |",
            cell(s, "point", "verification_ap", "clean_vs_corrupt"),
            cell(s, "mog1", "verification_ap", "clean_vs_corrupt"),
            cell(s, "mog2", "verification_ap", "clean_vs_corrupt")
        );
    }
    t
}

fn table2(s: &Value) -> String {
    let mut t = format!(
        "Table 2, N = {}, D = {}: Kendall's tau between uncertainty bin and performance (sign inverted), ours (paper).\n\n| | MoG-1 | MoG-2 |\n|---|---|---|\n",
        s["digits"], s["dim"]
    );
    for (key, name) in [("tau_ap", "AP correlation"), ("tau_knn", "KNN correlation")] {
        for variant in ["clean", "corrupt"] {
            let _ = writeln!(
                t,
                "| {name}, {variant} | {} | {} |",
                cell(s, "mog1", key, variant),
                cell(s, "mog2", key, variant)
            );
        }
    }
    t
}

fn table5(s: &Value) -> String {
    let mut t = String::from(
        "Table 5 (Appendix E): MoG-1 with beta = 0 and beta = 1e-4.\n\n| | beta = 0 | beta = 1e-4 |\n|---|---|---|\n",
    );
    for (key, name) in [
        ("verification_ap", "Verification AP"),
        ("knn_accuracy", "KNN accuracy"),
        ("tau_ap", "AP correlation"),
        ("tau_knn", "KNN correlation"),
    ] {
        for variant in ["clean", "corrupt"] {
            let _ = writeln!(
                t,
                "| {name}, {variant} | {} | {} |",
                cell(s, "mog1-beta0", key, variant),
                cell(s, "mog1", key, variant)
            );
        }
    }
    t
}

/// Table 6 (plurality KNN by gallery/probe) or Table 7 (τ by gallery/probe), point and MoG-1.
fn table67(results: &[(Variant, Vec<Value>)], tau: bool) -> String {
    let mut t = if tau {
        String::from("Table 7 (Appendix G): KNN correlation with uncertainty by gallery/probe, MoG-1.\n\n| gallery | probe | MoG-1 |\n|---|---|---|\n")
    } else {
        String::from("Table 6 (Appendix G): plurality KNN accuracy by gallery/probe.\n\n| gallery | probe | point | MoG-1 |\n|---|---|---|---|\n")
    };
    let rows = |key: &str| -> Vec<(String, String, f64)> {
        let Some((_, evals)) = results.iter().find(|(v, _)| v.key == key) else { return Vec::new() };
        let Some(first) = evals.first() else { return Vec::new() };
        first["gallery_probe"]
            .as_array()
            .map(|a| {
                a.iter()
                    .enumerate()
                    .map(|(i, g)| {
                        let field = if tau { "tau_knn" } else { "plurality" };
                        let vals: Vec<f64> =
                            evals.iter().filter_map(|e| e["gallery_probe"][i][field].as_f64()).collect();
                        let mean =
                            if vals.is_empty() { f64::NAN } else { vals.iter().sum::<f64>() / vals.len() as f64 };
                        (
                            g["gallery"].as_str().unwrap_or("").to_string(),
                            g["probe"].as_str().unwrap_or("").to_string(),
                            mean,
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let (point, mog) = (rows("point"), rows("mog1"));
    for (i, (g, p, m)) in mog.iter().enumerate() {
        if tau {
            let _ = writeln!(t, "| {g} | {p} | {m:.3} |");
        } else {
            let pt = point.get(i).map_or("n/a".into(), |r| format!("{:.3}", r.2));
            let _ = writeln!(t, "| {g} | {p} | {pt} | {m:.3} |");
        }
    }
    t
}

fn appendix_b(s: &Value) -> String {
    let mut t = String::from("Appendix B: point embeddings, soft contrastive vs contrastive loss at several margins.\n\n| loss | AP clean | AP corrupt | KNN clean | KNN corrupt |\n|---|---|---|---|---|\n");
    let mut keys = vec![("point".to_string(), "soft contrastive".to_string())];
    keys.extend(MARGINS.iter().map(|m| (format!("point-contrastive-m{m}"), format!("contrastive, M = {m}"))));
    for (k, name) in keys {
        let _ = writeln!(
            t,
            "| {name} | {} | {} | {} | {} |",
            cell(s, &k, "verification_ap", "clean"),
            cell(s, &k, "verification_ap", "corrupt"),
            cell(s, &k, "knn_accuracy", "clean"),
            cell(s, &k, "knn_accuracy", "corrupt")
        );
    }
    t
}

fn draw_figures(args: &ReproduceArgs, results: &[(Variant, Vec<Value>)], device: tch::Device) -> Result<()> {
    let test = load_split(args.digits, NDigitSplit::TestUnseen)?;
    for (v, evals) in results.iter().filter(|(v, _)| ["point", "mog1", "mog2"].contains(&v.key.as_str())) {
        let Some(run_path) = evals.first().and_then(|e| e["run"].as_str()) else { continue };
        let run = RunDir::open(Path::new(run_path))?;
        let config = run.read_config()?.hib;
        let (_vs, net) = load_model(&run, &config, device)?;
        let (clean, corrupt) = embed_twins(&net, &test, device)?;
        let title = format!("{} embeddings, N = {}, D = {}", v.label, args.digits, args.dim);
        if args.dim >= 2 {
            figures::embedding_ellipses(
                &args.out.join(format!("embeddings_{}.png", v.key)),
                &clean,
                &corrupt,
                400,
                &title,
            )?;
        } else {
            // Appendix D orders the centroids of all classes: the seen and unseen test classes.
            let seen = load_split(args.digits, NDigitSplit::TestSeen)?;
            let seen = embed_dataset(
                &net,
                &seen,
                &Corruption::Clean,
                device,
                EmbedOptions { samples: 1, ..Default::default() },
            )?;
            let all = EmbeddedSet::concat(&[&seen, &clean]);
            let (order, score, run_len) =
                figures::centroid_line(&args.out.join(format!("number_line_{}.png", v.key)), &all, &title)?;
            write(
                &args.out.join(format!("number_line_{}.json", v.key)),
                &(serde_json::to_string_pretty(
                    &json!({"order": order, "adjacent_sharing_a_digit": score, "out_of": order.len().saturating_sub(1), "mean_run_length": run_len}),
                )? + "\n"),
            )?;
        }
        if v.key != "point" {
            let e = &evals[0];
            let series = |variant: &str, key: &str| -> Vec<f64> {
                e["bins"][variant][key]
                    .as_array()
                    .map(|a| a.iter().map(|x| x.as_f64().unwrap_or(f64::NAN)).collect())
                    .unwrap_or_default()
            };
            let (ap_c, ap_k, knn_c, knn_k) =
                (series("clean", "ap"), series("corrupt", "ap"), series("clean", "knn"), series("corrupt", "knn"));
            figures::uncertainty_bins(
                &args.out.join(format!("uncertainty_bins_{}.png", v.key)),
                &[
                    ("AP, clean", &ap_c),
                    ("AP, corrupt", &ap_k),
                    ("KNN, clean", &knn_c),
                    ("KNN, corrupt gallery", &knn_k),
                ],
                &format!("{title}: performance vs uncertainty (Fig. 5)"),
            )?;
        }
    }
    Ok(())
}

fn readme(args: &ReproduceArgs, s: &Value) -> String {
    // Training time of each model (mean over seeds), from its run's state: a re-invocation that
    // reuses finished runs still reports what the training cost.
    let train_times: Vec<String> = s["models"]
        .as_object()
        .map(|models| {
            models
                .values()
                .filter_map(|m| {
                    let secs: Vec<f64> = m["train_seconds"].as_array()?.iter().filter_map(Value::as_f64).collect();
                    let mean = secs.iter().sum::<f64>() / secs.len().max(1) as f64;
                    Some(format!("{} {:.0} s", m["label"].as_str()?, mean))
                })
                .collect()
        })
        .unwrap_or_default();
    format!(
        "# HIB reproduction, N = {}, D = {}\n\nCommand:\n\n```sh\n{}\n```\n\n{} training steps per model ({}, Adam, lr {}, {} learning rate), {} seed(s), \
         evaluation on `test_unseen` with {} repeats of the sampling-dependent metrics. Training time per model: {}. \
         Wall-clock of the last invocation: {:.0} s (finished runs are reused, not retrained).\n\n{}\n{}\n\
         Files: `summary.json` (every number, with the paper's), `table*.md`, figures `*.png`, runs in `runs/` \
         (config.json, metrics.jsonl, model.safetensors, eval.json; checkpoints every 1,000 steps in `runs/*/checkpoints/`).\n",
        args.digits,
        args.dim,
        s["command"].as_str().unwrap_or(""),
        args.steps,
        match &args.group {
            Some(g) => format!("grouped batches of {g} (classes x images per class): every within-class pair and as many cross-class ones"),
            None => "batch 128 independent pairs as in the paper".to_string(),
        },
        args.lr.unwrap_or(HibConfig::default().learning_rate),
        match args.lr_schedule {
            crate::hib::ScheduleArg::Constant => "constant",
            crate::hib::ScheduleArg::Cosine => "cosine-decayed",
        },
        args.seeds,
        args.repeats,
        train_times.join(", "),
        s["seconds"].as_f64().unwrap_or(0.0),
        table1(s),
        table2(s),
    )
}

/// Per model and metric, the training time (seconds on this machine) of the first kept
/// checkpoint at or above the paper's value, or the best value reached if none is.
fn time_to_quality(
    args: &ReproduceArgs,
    curves: &serde_json::Map<String, Value>,
    results: &[(Variant, Vec<Value>)],
) -> String {
    let paper = paper(args.digits, args.dim).unwrap_or(Value::Null);
    let mut t = format!(
        "Time to quality, N = {}, D = {}: training wall-clock (2 threads, this machine) until a kept checkpoint \
         reaches the paper's value on test_unseen (one Monte-Carlo repeat per checkpoint).\n\n\
         | model | metric | paper | reached at | best so far |\n|---|---|---|---|---|\n",
        args.digits, args.dim
    );
    for (v, _) in results {
        let Some(rows) = curves.get(&v.key).and_then(Value::as_array) else { continue };
        for (key, variant, name) in [
            ("verification_ap", "clean", "AP clean"),
            ("verification_ap", "corrupt", "AP corrupt"),
            ("knn_accuracy", "clean", "KNN clean"),
            ("knn_accuracy", "corrupt", "KNN corrupt"),
        ] {
            let Some(target) = paper[&v.key][key][variant].as_f64() else { continue };
            let points: Vec<(u64, f64, f64)> = rows
                .iter()
                .filter_map(|r| Some((r["step"].as_u64()?, r["train_seconds"].as_f64()?, r[key][variant].as_f64()?)))
                .collect();
            let reached = points.iter().find(|p| p.2 >= target);
            let best = points.iter().max_by(|a, b| a.2.total_cmp(&b.2));
            let _ = writeln!(
                t,
                "| {} | {name} | {target:.3} | {} | {} |",
                v.label,
                reached.map_or("not reached".to_string(), |p| format!("{} s (step {})", p.1.round(), p.0)),
                best.map_or("n/a".to_string(), |p| format!("{:.3} at step {} ({} s)", p.2, p.0, p.1.round())),
            );
        }
    }
    t
}

/// AP and KNN against training steps for the seed-0 run of point, MoG-1 and MoG-2:
/// `curves.json` and `quality_vs_steps.png`.
fn draw_curves(args: &ReproduceArgs, results: &[(Variant, Vec<Value>)], device: tch::Device) -> Result<()> {
    let mut all = serde_json::Map::new();
    let mut series: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for (v, evals) in results.iter().filter(|(v, _)| ["point", "mog1", "mog2"].contains(&v.key.as_str())) {
        let Some(run_path) = evals.first().and_then(|e| e["run"].as_str()) else { continue };
        let rows = crate::hib::curve(Path::new(run_path), 1, device)?;
        for (key, variant, what) in [
            ("verification_ap", "clean", "AP clean"),
            ("verification_ap", "corrupt", "AP corrupt"),
            ("knn_accuracy", "corrupt", "KNN corrupt"),
        ] {
            series.push((
                format!("{} {what}", v.label),
                rows.iter().filter_map(|r| Some((r["step"].as_f64()?, r[key][variant].as_f64()?))).collect(),
            ));
        }
        all.insert(v.key.clone(), Value::Array(rows));
    }
    write(&args.out.join("curves.json"), &(serde_json::to_string_pretty(&Value::Object(all.clone()))? + "\n"))?;
    write(&args.out.join("time_to_quality.md"), &time_to_quality(args, &all, results))?;
    let named: Vec<(&str, Vec<(f64, f64)>)> = series.iter().map(|(n, p)| (n.as_str(), p.clone())).collect();
    figures::line_chart(
        &args.out.join("quality_vs_steps.png"),
        &named,
        "training steps",
        "test_unseen",
        &format!("N = {}, D = {}: quality vs training steps", args.digits, args.dim),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A summary with the given models, every metric of model k equal to 0.1·(k + 1).
    fn summary(models: &[&str]) -> Value {
        let mut m = serde_json::Map::new();
        for (k, name) in models.iter().enumerate() {
            let x = 0.1 * (k + 1) as f64;
            let twin = json!({"clean": x, "corrupt": x});
            m.insert(
                name.to_string(),
                json!({"verification_ap": twin, "knn_accuracy": twin, "tau_ap": twin, "tau_knn": twin}),
            );
        }
        json!({"digits": 2, "dim": 2, "models": m, "paper": paper(2, 2)})
    }

    #[test]
    fn appendix_b_lists_soft_then_every_margin() {
        let t = appendix_b(&summary(&[
            "point",
            "point-contrastive-m0.5",
            "point-contrastive-m1",
            "point-contrastive-m2",
            "point-contrastive-m4",
        ]));
        let rows: Vec<&str> = t.lines().filter(|l| l.starts_with("| ") && !l.starts_with("| loss")).collect();
        assert_eq!(rows.len(), 5, "{t}");
        assert!(rows[0].starts_with("| soft contrastive | 0.100 (0.987) |"), "{}", rows[0]);
        assert!(rows[4].starts_with("| contrastive, M = 4 | 0.500 |"), "{}", rows[4]);
    }

    #[test]
    fn table5_puts_beta_zero_beside_the_paper_model() {
        let t = table5(&summary(&["mog1", "mog1-beta0"]));
        assert!(t.contains("| Verification AP, clean | 0.200 | 0.100 (0.989) |"), "{t}");
        assert!(t.contains("| KNN correlation, corrupt | 0.200 | 0.100 (0.470) |"), "{t}");
    }

    #[test]
    fn paper_values_exist_for_the_four_settings_only() {
        assert_eq!(paper(3, 3).unwrap()["mog2"]["knn_accuracy"]["corrupt"], 0.598);
        assert_eq!(paper(2, 3).unwrap()["mog1"]["tau_ap"]["corrupt"], 0.86);
        assert!(paper(2, 1).is_none());
    }
}
