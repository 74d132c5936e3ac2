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
}
