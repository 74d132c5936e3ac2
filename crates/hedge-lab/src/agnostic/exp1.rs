//! `hedge agnostic exp1` as a library: the paper's Experiment 1 on Context-MNIST — a CNN trained
//! on the target and one trained on the background, each scored on the target test and on
//! background-only images while it trains (the Fig. 2 analogue). Writes `config.json`,
//! `metrics.jsonl`, `table.md` and `cross_domain.png`.

use std::path::Path;

use hedge_data::{Backgrounds, ContextMnistConfig, ContextSet, Mnist};
use hedge_run::RunDirectory;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};

use super::context::{cross_domain, ContextTensors, CrossDomainPoint, ImageSet};
use crate::error::{invalid, Result};
use crate::LabError;
use hedge_agnostic::{ModelConfig, TrainConfig};
use hedge_run::ParamGuard;

/// Experiment 1's `config.json` (fields in the file's order).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct Exp1Config {
    /// [`crate::agnostic::sweep::SWEEP_SCHEMA`] when written: its settings are a sweep's.
    pub schema: u32,
    pub command: String,
    /// What the context test holds.
    pub context_test: String,
    pub data: ContextMnistConfig,
    /// Steps between evaluations of both models.
    pub every: usize,
    pub model: ModelConfig,
    pub threads: i32,
    pub train: TrainConfig,
}

impl hedge_run::schema::Schema for Exp1Config {
    const CURRENT: u32 = crate::agnostic::sweep::SWEEP_SCHEMA;
    const WHAT: &'static str = "Experiment 1's config.json";

    fn upgrade(_from: u32, form: &mut serde_json::Map<String, serde_json::Value>) -> std::result::Result<(), String> {
        crate::agnostic::sweep::v1::networks(form)
    }
}

hedge_run::versioned_serde!(Exp1Config);

impl Exp1Config {
    pub const CONTEXT_TEST: &'static str = "backgrounds without a digit: half plain, half BSDS500 crops";

    /// Builds the data from `data_dir`, trains and scores both models, and writes the results
    /// into a new directory `out` (refusing one with files unless `overwrite`). Returns the
    /// learning curves and the table.
    pub fn run(&self, data_dir: &Path, out: &Path, overwrite: bool) -> Result<(Vec<CrossDomainPoint>, String)> {
        self.check_ref()?;
        let mnist = Mnist::load(&data_dir.join("mnist"))?;
        let backgrounds = Backgrounds::load(&data_dir.join("bsds500"))?;
        let data = self.data.build(&mnist, &backgrounds)?;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(self.data.seed.wrapping_add(7));
        let context_test = ImageSet::new(&ContextSet::backgrounds_only(self.data.test, &backgrounds, &mut rng));
        let tensors = ContextTensors::new(&data);
        let dir = RunDirectory::create(out, "agnostic Experiment 1", overwrite)?;
        dir.write_json("config.json", self)?;
        let points = cross_domain(&tensors, &context_test, self.model, &self.train, self.every)?;
        let mut lines = Vec::new();
        for p in &points {
            lines.extend(serde_json::to_vec(p).expect("a point serialises"));
            lines.push(b'\n');
        }
        dir.write_bytes("metrics.jsonl", &lines)?;
        let last = |name: &str| points.iter().rev().find(|p| p.model == name).expect("both models evaluated");
        let (t, c) = (last("target"), last("context"));
        let md = format!(
            "Experiment 1 on Context-MNIST (ρ = {}): two independent CNNs, final accuracies after {} steps.\n\n\
             | model | target test (digit ≥ 5, IID) | context test (background, no digit) |\n|---|---|---|\n\
             | trained on the target | {:.3} | {:.3} |\n| trained on the context | {:.3} | {:.3} |\n\n\
             A target model that scores well above 0.5 on images without a digit has learned the background.\n\n\
             Paper (animals / places): target model 0.92 / 0.79, context model 0.88 / 0.91.\n\nCommand: `{}`\n",
            self.data.rho, self.train.steps, t.target_test, t.context_test, c.target_test, c.context_test, self.command
        );
        dir.write_bytes("table.md", md.as_bytes())?;
        let series = |name: &str, test: fn(&CrossDomainPoint) -> f64, label: &str| -> hedge_plot::MeanCurve {
            let v = points.iter().filter(|p| p.model == name).map(|p| (p.step as f64, test(p), 0.0)).collect();
            (label.to_string(), v)
        };
        hedge_plot::curves_with_error(
            &dir.file("cross_domain.png"),
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
        Ok((points, md))
    }
}

impl ParamGuard for Exp1Config {
    type Error = LabError;

    fn check_ref(&self) -> Result<()> {
        if self.every == 0 || self.train.steps == 0 {
            return Err(invalid("steps/every", format!("{}/{}", self.train.steps, self.every), "both must be ≥ 1"));
        }
        self.train.check_ref()?;
        Ok(self.model.check_ref()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_committed_config_reads_typed() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../results/agnostic/context-mnist-exp1/config.json");
        let config: Exp1Config = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        assert_eq!((config.every, config.context_test.as_str()), (100, Exp1Config::CONTEXT_TEST));
        config.check_ref().unwrap();
    }
}
