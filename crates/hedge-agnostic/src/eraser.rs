//! Concept erasers as an extension point: an [`Eraser`] is fitted on frozen features and their
//! concept labels (scikit-learn's `fit`), and the [`FittedEraser`] it returns moves features
//! (`transform`). Which erasers exist is one table, [`crate::erasers::ERASERS`]: a sweep's `removal`, the CLI's
//! `--removal` and Python's `hedge.agnostic.Eraser(kind)` all read it, so a new eraser is its own
//! file, one line there, and its test (ARCHITECTURE.md walks through one, the
//! [`crate::mean_difference`] eraser).
//!
//! Settings travel as an [`EraserSpec`], the JSON object a sweep's `config.json` holds
//! (`{"kind": "inlp", "iterations": 10}`): the eraser's registered name and its parameters.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tch::Tensor;

use crate::error::{invalid, Result};

/// A concept eraser, before fitting.
pub trait Eraser: Send + Sync {
    /// Fits on features `x` (`[m, d]` row-major) with concept labels `z` (`[m]`, classes
    /// 0..k), each row weighted by `weights` where given; `seed` seeds whatever the fit draws.
    fn fit(&self, x: &[f64], d: usize, z: &[i64], weights: Option<&[f64]>, seed: u64) -> Result<Box<dyn FittedEraser>>;

    /// [`Self::fit`] knowing each row's task label `target` (`[m]`, classes 0..), for erasers
    /// that keep what the task needs; the default ignores it.
    fn fit_for_task(
        &self,
        x: &[f64],
        d: usize,
        z: &[i64],
        target: &[i64],
        weights: Option<&[f64]>,
        seed: u64,
    ) -> Result<Box<dyn FittedEraser>> {
        let _ = target;
        self.fit(x, d, z, weights, seed)
    }

    /// Refuses settings features of width `feature_dim` cannot take (checked before any
    /// network trains). Most erasers take any width.
    fn check_width(&self, feature_dim: usize) -> Result<()> {
        let _ = feature_dim;
        Ok(())
    }
}

/// A fitted eraser: where full erasure moves each row.
pub trait FittedEraser: Send {
    /// Dimensions the eraser removes (the feature width for an eraser that moves every
    /// direction).
    fn rank(&self) -> usize;

    /// How far full erasure moves each row of `x`: erased at strength s, a row is
    /// `x + s · displacement`. `concept` (each row's concept label) is read by erasers that
    /// need it (an oracle, such as quadratic LEACE); the others ignore it.
    ///
    /// # Shapes
    /// `x`: `[n, d]` f64, `concept`: `[n]` i64 → `[n, d]` f64.
    fn displacement(&self, x: &Tensor, concept: &Tensor) -> Tensor;

    /// Whether [`Self::displacement`] reads each row's concept label (an oracle), so that a
    /// caller without labels is refused instead of given a wrong erasure.
    fn reads_concept(&self) -> bool {
        false
    }
}

/// An eraser's settings: its registered `kind` and its parameters, read and written as one
/// JSON object (`{"kind": "inlp", "iterations": 10}`).
#[derive(Debug, Clone, PartialEq)]
pub struct EraserSpec {
    pub kind: String,
    pub params: BTreeMap<String, Value>,
}

impl EraserSpec {
    /// The eraser `kind` with its default parameters.
    pub fn new(kind: &str) -> Self {
        EraserSpec { kind: kind.to_string(), params: BTreeMap::new() }
    }

    /// The spec with parameter `name` set.
    pub fn with(mut self, name: &str, value: impl Into<Value>) -> Self {
        self.params.insert(name.to_string(), value.into());
        self
    }

    /// How reports name it: the kind, then each parameter's value (`inlp-10`).
    pub fn label(&self) -> String {
        let mut label = self.kind.clone();
        for value in self.params.values() {
            match value {
                Value::String(s) => label.push_str(&format!("-{s}")),
                v => label.push_str(&format!("-{v}")),
            }
        }
        label
    }

    /// The whole-number parameter `name` (`default` when absent).
    pub fn count(&self, name: &'static str, default: usize) -> Result<usize> {
        match self.params.get(name) {
            None => Ok(default),
            Some(v) => v
                .as_u64()
                .map(|n| n as usize)
                .ok_or_else(|| invalid(name, v, format!("eraser '{}' takes a whole number here", self.kind))),
        }
    }

    /// Refuses parameters the eraser does not take (a typo is never silently ignored).
    pub fn only(&self, known: &[&str]) -> Result<()> {
        match self.params.keys().find(|k| !known.contains(&k.as_str())) {
            None => Ok(()),
            Some(k) => Err(invalid(
                "eraser parameter",
                k,
                format!(
                    "eraser '{}' takes {}",
                    self.kind,
                    if known.is_empty() { "no parameters".to_string() } else { known.join(", ") }
                ),
            )),
        }
    }
}

impl Serialize for EraserSpec {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let mut object = serde_json::Map::new();
        object.insert("kind".into(), Value::String(self.kind.clone()));
        object.extend(self.params.iter().map(|(k, v)| (k.clone(), v.clone())));
        object.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for EraserSpec {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        let mut object = serde_json::Map::deserialize(deserializer)?;
        let kind = match object.remove("kind") {
            Some(Value::String(kind)) => kind,
            _ => return Err(serde::de::Error::custom("an eraser's settings need \"kind\": the eraser's name")),
        };
        Ok(EraserSpec { kind, params: object.into_iter().collect() })
    }
}

/// One registered eraser: the name settings use, a line for help texts, and how its settings
/// build it (refusing parameters it does not take).
pub struct Registration {
    pub kind: &'static str,
    pub about: &'static str,
    pub build: fn(&EraserSpec) -> Result<Box<dyn Eraser>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_read_and_write_as_the_sweeps_config_holds_them() {
        for text in [r#"{"kind":"leace"}"#, r#"{"iterations":10,"kind":"inlp"}"#, r#"{"kind":"quadratic-leace"}"#] {
            let spec: EraserSpec = serde_json::from_str(text).unwrap();
            let back: Value = serde_json::to_value(&spec).unwrap();
            assert_eq!(back, serde_json::from_str::<Value>(text).unwrap());
            spec.build().unwrap();
        }
        let inlp: EraserSpec = serde_json::from_str(r#"{"kind":"inlp","iterations":10}"#).unwrap();
        assert_eq!(inlp.label(), "inlp-10");
        assert_eq!(EraserSpec::new("leace").label(), "leace");
    }

    #[test]
    fn unknown_erasers_and_parameters_are_refused_by_name() {
        let e = EraserSpec::new("pca").build().err().unwrap().to_string();
        assert!(e.contains("= pca") && e.contains("leace, inlp"), "{e}");
        let e = EraserSpec::new("leace").with("iterations", 3).build().err().unwrap().to_string();
        assert!(e.contains("iterations") && e.contains("no parameters"), "{e}");
        let e = EraserSpec::new("inlp").with("iterations", 0).build().err().unwrap().to_string();
        assert!(e.contains("at least one round"), "{e}");
        let e = EraserSpec::new("inlp").with("iterations", "ten").build().err().unwrap().to_string();
        assert!(e.contains("whole number"), "{e}");
    }
}
