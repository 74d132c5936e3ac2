//! A run's settings as data: hedge's defaults, a recipe file over them, overrides by name over
//! that (a command's flags, Python's settings dict), a user's images and a length, checked once.
//! `hib train` and `hedge.hib.train` both build a [`SettingsRequest`] and call
//! [`HibData::resolve`]; neither maps a setting by hand.

use std::path::PathBuf;

use serde_json::{Map, Value};

use crate::config::{EmbeddingKind, Steps};
use crate::data::HibData;
use crate::{EmbedError, HibConfig, Result};
use hedge_run::ParamGuard;

/// A user's images instead of N-digit MNIST, and how to split them ([`HibData::with_own_images`]).
#[derive(Debug, Clone, PartialEq)]
pub struct OwnImagesRequest {
    /// An image folder (`ROOT/<label>/<image>.png`) or an `.npz` of `images` and `labels`.
    pub path: PathBuf,
    /// Whole classes held out as `test_unseen` (`None`: a fifth of the classes, at least 2).
    pub unseen_classes: Option<usize>,
    /// Share of each remaining class's images held out as `test_seen`.
    pub seen_test_fraction: f64,
    /// Seed of both splits.
    pub split_seed: u64,
}

/// Where a new run's settings come from, applied in this order: hedge's defaults
/// ([`HibConfig::default`]), the `recipe` file, the `overrides`, the `own_images`, the length.
#[derive(Debug, Clone, Default)]
pub struct SettingsRequest {
    /// A TOML recipe of any [`HibConfig`] fields ([`HibConfig::from_toml_file`]).
    pub recipe: Option<PathBuf>,
    /// Settings by their name in the config's serde form (`config.json` of a run: `learning_rate`,
    /// `batch`, `group_classes`, …); an unknown name is refused with its spelling.
    pub overrides: Map<String, Value>,
    /// What the overrides are, for errors ("hib train's flags", "settings").
    pub source: String,
    pub own_images: Option<OwnImagesRequest>,
    /// Optimiser steps (`None`: the recipe's; beside a budget, the budget only caps the wall-clock).
    pub steps: Option<usize>,
    /// Minutes of training; without `steps`, the step count is planned from the first steps' speed.
    pub budget_minutes: Option<f64>,
}

impl SettingsRequest {
    /// A request of `overrides` from `source` over the defaults.
    pub fn new(source: impl Into<String>, overrides: Map<String, Value>) -> Self {
        SettingsRequest { source: source.into(), overrides, ..Default::default() }
    }

    /// Sets the recipe file laid over the defaults.
    pub fn with_recipe(mut self, recipe: Option<PathBuf>) -> Self {
        self.recipe = recipe;
        self
    }

    /// Sets the user's images.
    pub fn with_own_images(mut self, own: Option<OwnImagesRequest>) -> Self {
        self.own_images = own;
        self
    }

    /// Sets the length: `steps`, a `budget_minutes`, both or neither.
    pub fn with_length(mut self, steps: Option<usize>, budget_minutes: Option<f64>) -> Self {
        self.steps = steps;
        self.budget_minutes = budget_minutes;
        self
    }
}

impl HibData {
    /// The checked config of `request` (see [`SettingsRequest`] for the order); a user's images
    /// are decoded here, through `self`, which keeps them for the rest of the command.
    ///
    /// # Errors
    /// The recipe's read and parse errors naming the file; [`hedge_run::RunError::InvalidConfig`]
    /// naming an unknown or ill-typed override, `components` on a model that is no mixture, and
    /// every rule of [`HibConfig::check_ref`]; the image set's errors naming its path.
    pub fn resolve(&self, request: &SettingsRequest) -> Result<HibConfig> {
        let base = match &request.recipe {
            Some(path) => HibConfig::from_toml_file(path)?,
            None => HibConfig::default(),
        };
        let mut config = hedge_run::with_overrides(&base, &request.overrides, &request.source)?;
        if let Some(components) = request.overrides.get("components") {
            if !matches!(config.model.embedding, EmbeddingKind::Mixture { .. }) {
                return Err(EmbedError::invalid(
                    "components",
                    components,
                    format!(
                        "components apply to mixtures, but the model is {:?}; set the model to mog",
                        config.model.embedding.kind()
                    ),
                ));
            }
        }
        if let Some(own) = &request.own_images {
            config =
                self.with_own_images(config, &own.path, own.unseen_classes, own.seen_test_fraction, own.split_seed)?;
        }
        if request.steps.is_some() || request.budget_minutes.is_some() {
            let steps = Steps::from_flags(request.steps, request.budget_minutes, config.schedule.steps);
            config = config.with_training(steps);
        }
        config.check_ref()?;
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::BatchComposition;
    use serde_json::json;

    fn overrides(v: Value) -> Map<String, Value> {
        v.as_object().cloned().expect("an object")
    }

    fn data() -> HibData {
        HibData::new(hedge_data::DataRoot::at("/nonexistent"))
    }

    #[test]
    fn overrides_by_name_land_on_the_fields_the_builders_set() {
        let request = SettingsRequest::new(
            "flags",
            overrides(json!({"model": "mog", "components": 2, "learning_rate": 0.01, "batch": "grouped",
                             "group_classes": 16, "group_size": 4, "pair_set": "all"})),
        )
        .with_length(Some(50), None);
        let got = data().resolve(&request).unwrap();
        let want = HibConfig::default()
            .with_model(EmbeddingKind::Mixture { components: 2 })
            .with_learning_rate(0.01)
            .with_batch(BatchComposition::Grouped { classes: 16, per_class: 4 })
            .with_pair_set(crate::config::PairSet::All)
            .with_steps(50);
        assert_eq!(got, want);
    }

    #[test]
    fn a_default_request_is_the_default_config_on_the_paper_s_protocol() {
        let got = data().resolve(&SettingsRequest::new("settings", Map::new())).unwrap();
        assert_eq!(got, HibConfig::default());
        assert_eq!(got.data.protocol, hedge_data::NDigitProtocol::Instance);
    }

    #[test]
    fn mistakes_are_refused_by_name() {
        let err = |v: Value| data().resolve(&SettingsRequest::new("flags", overrides(v))).unwrap_err().to_string();
        assert!(err(json!({"learning_rte": 0.1})).contains("learning_rte"), "{}", err(json!({"learning_rte": 0.1})));
        let components = err(json!({"components": 3}));
        assert!(components.contains("components") && components.contains("mog"), "{components}");
        assert!(err(json!({"dim": 0})).contains("dim"));
        assert!(err(json!({"model": "cube"})).contains("cube"));
    }
}
