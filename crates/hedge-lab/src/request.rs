//! Command-line requests: each experiment's flags (clap `Args`) and the one function that turns
//! them into the experiment's typed settings, so that `hedge-cli` only parses, calls and prints,
//! and the rule by which a flag's default depends on another (a protocol's budget, a dataset's
//! step count) lives beside the experiment it sets up.

/// A flag's values from a library registry (name, summary): the names clap accepts, each with its
/// summary in `--help`.
pub fn registered(
    entries: impl IntoIterator<Item = (&'static str, &'static str)>,
) -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(
        entries.into_iter().map(|(name, about)| clap::builder::PossibleValue::new(name).help(about)),
    )
}

/// Names the flag whose value an error refers to (`--alphas '0:2': invalid setting …`).
pub(crate) trait FlagContext<T> {
    fn flag(self, flag: impl std::fmt::Display) -> crate::Result<T>;
}

impl<T, E: Into<crate::LabError>> FlagContext<T> for std::result::Result<T, E> {
    fn flag(self, flag: impl std::fmt::Display) -> crate::Result<T> {
        self.map_err(|e| crate::LabError::Flag { flag: flag.to_string(), source: Box::new(e.into()) })
    }
}

/// `KEY=VALUE` flags (`--set`) as settings by name: a VALUE that reads as JSON (a number,
/// `true`, `[64, 128]`) is that value, any other a string (`cosine`). A pair without `=` or a key
/// given twice is refused, naming `flag`.
pub fn key_values(flag: &'static str, pairs: &[String]) -> crate::Result<serde_json::Map<String, serde_json::Value>> {
    let mut map = serde_json::Map::new();
    for pair in pairs {
        let Some((key, value)) = pair.split_once('=') else {
            return Err(crate::error::invalid(flag, pair, "write KEY=VALUE (e.g. init_a=2)"));
        };
        let value = serde_json::from_str(value).unwrap_or_else(|_| serde_json::Value::String(value.to_string()));
        if map.insert(key.trim().to_string(), value).is_some() {
            return Err(crate::error::invalid(flag, pair, format!("{key} is given twice")));
        }
    }
    Ok(map)
}

/// `settings` with `--set KEY=VALUE` pairs laid over their serde form
/// ([`hedge_run::with_overrides`]): a KEY with dots names a field inside another (`train.lr`,
/// `model.epochs`), so every setting of the experiment is a flag without a flag of its own, and
/// a key the settings do not have is refused with its path. `what` names the settings in errors.
pub fn with_set<T: serde::Serialize + serde::de::DeserializeOwned + Clone>(
    settings: &T,
    pairs: &[String],
    what: &str,
) -> crate::Result<T> {
    if pairs.is_empty() {
        return Ok(settings.clone());
    }
    let mut nested = serde_json::Map::new();
    for (key, value) in key_values("set", pairs)? {
        let mut path: Vec<&str> = key.split('.').collect();
        let last = path.pop().unwrap_or_default();
        let mut table = &mut nested;
        for part in path {
            let entry = table.entry(part.to_string()).or_insert_with(|| serde_json::Value::Object(Default::default()));
            let serde_json::Value::Object(inner) = entry else {
                return Err(crate::error::invalid("set", &key, format!("{part} is given a value and fields at once")));
            };
            table = inner;
        }
        table.insert(last.to_string(), value);
    }
    Ok(hedge_run::with_overrides(settings, &nested, &format!("--set on {what}"))?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_values_read_json_values_and_strings_and_refuse_what_is_not_a_pair() {
        let got =
            key_values("set", &["init_a=2".into(), "lr_schedule=cosine".into(), "channels=[64,128]".into()]).unwrap();
        assert_eq!(
            serde_json::Value::Object(got),
            serde_json::json!({"init_a": 2, "lr_schedule": "cosine", "channels": [64, 128]})
        );
        let err = key_values("set", &["init_a".into()]).unwrap_err().to_string();
        assert!(err.contains("write KEY=VALUE"), "{err}");
        let err = key_values("set", &["seed=1".into(), "seed=2".into()]).unwrap_err().to_string();
        assert!(err.contains("seed is given twice"), "{err}");
    }

    /// `--set` reaches a field inside another by its dotted path, leaves the rest as it was,
    /// and refuses a path the settings do not have.
    #[test]
    fn set_lays_dotted_keys_over_nested_settings() {
        let base = hedge_agnostic::TrainConfig::default();
        let got = with_set(&base, &["learning_rate=0.02".into(), "steps=7".into()], "train").unwrap();
        assert_eq!((got.learning_rate, got.steps, got.batch), (0.02, 7, base.batch));
        #[derive(Clone, serde::Serialize, serde::Deserialize)]
        struct Both {
            train: hedge_agnostic::TrainConfig,
            model: hedge_agnostic::ModelConfig,
        }
        let both = Both { train: base, model: hedge_agnostic::ModelConfig::default() };
        let got = with_set(&both, &["train.learning_rate=0.5".into(), "model.bottleneck=64".into()], "sweep").unwrap();
        assert_eq!((got.train.learning_rate, got.model.bottleneck), (0.5, Some(64)));
        let e = with_set(&both, &["train.lr=0.5".into()], "sweep").err().unwrap().to_string();
        assert!(e.contains("train.lr") && e.contains("no such setting"), "{e}");
    }
}
