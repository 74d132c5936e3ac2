//! Settings validated once (linfa's `ParamGuard` idea): every configuration of hedge implements
//! [`ParamGuard::check_ref`]; [`ParamGuard::check`] hands back a [`Checked`] value, and the
//! functions that need valid settings take `Checked<…>`, so unchecked settings cannot reach them.

use std::ops::Deref;

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};

/// Validation of a configuration.
pub trait ParamGuard: Sized {
    type Error;

    /// Checks every setting without consuming them; an error names the field, its value and
    /// the valid range.
    fn check_ref(&self) -> Result<(), Self::Error>;

    /// The settings, once [`ParamGuard::check_ref`] passes.
    fn check(self) -> Result<Checked<Self>, Self::Error> {
        self.check_ref()?;
        Ok(Checked(self))
    }
}

/// Settings that passed their [`ParamGuard::check_ref`]. Only [`ParamGuard::check`] makes
/// one, so holding a `Checked<T>` proves the check ran; it reads as `&T` and serialises as `T`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Checked<T>(T);

impl<T> Checked<T> {
    /// The settings themselves (to change them, then check again).
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> Deref for Checked<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> AsRef<T> for Checked<T> {
    fn as_ref(&self) -> &T {
        &self.0
    }
}

/// Settings as data: `base` in its serde form with `overrides` laid over it (objects merged key
/// by key, any other value replaced), read back. A key the settings do not have is refused with
/// its path (`model.epohcs`), so a typo never passes silently as a default; `source` names where
/// the overrides came from (a file, a flag, a Python argument).
pub fn with_overrides<T: Serialize + DeserializeOwned>(
    base: &T,
    overrides: &Map<String, Value>,
    source: &str,
) -> Result<T, crate::RunError> {
    fn merge(into: &mut Map<String, Value>, from: &Map<String, Value>) {
        for (key, value) in from {
            match (into.get_mut(key), value) {
                (Some(Value::Object(inner)), Value::Object(more)) => merge(inner, more),
                _ => {
                    into.insert(key.clone(), value.clone());
                }
            }
        }
    }
    let invalid = |value: String, reason: String| crate::RunError::InvalidConfig { field: "settings", value, reason };
    let mut form = match serde_json::to_value(base) {
        Ok(Value::Object(form)) => form,
        _ => return Err(invalid(source.into(), "these settings are not a table of named fields".into())),
    };
    merge(&mut form, overrides);
    let mut unknown = Vec::new();
    let read: Result<T, _> = serde_ignored::deserialize(Value::Object(form), |path| unknown.push(path.to_string()));
    if !unknown.is_empty() {
        return Err(invalid(
            format!("{source}: {}", unknown.join(", ")),
            "no such setting; check the spelling against the settings' serde form (config.json of a run)".into(),
        ));
    }
    read.map_err(|e| invalid(source.into(), e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Serialize)]
    struct Rate(f64);

    #[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
    struct Inner {
        epochs: u32,
        lr: f64,
    }

    #[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
    struct Outer {
        budget: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        projections: Option<u32>,
        model: Inner,
    }

    /// Overrides land where they name, nested ones inside their section, the rest keeps its
    /// value; a misspelt key, nested or not, is refused by its path.
    #[test]
    fn overrides_merge_into_the_serde_form_and_a_typo_is_named() {
        let base = Outer { budget: 100, projections: None, model: Inner { epochs: 1000, lr: 0.01 } };
        let over = |text: &str| serde_json::from_str::<Map<String, Value>>(text).unwrap();
        let got = with_overrides(&base, &over(r#"{"model": {"epochs": 50}, "projections": 10}"#), "test").unwrap();
        assert_eq!(got, Outer { budget: 100, projections: Some(10), model: Inner { epochs: 50, lr: 0.01 } });
        let err = with_overrides(&base, &over(r#"{"model": {"epohcs": 50}, "budgte": 3}"#), "settings=").unwrap_err();
        let err = err.to_string();
        assert!(err.contains("settings=: budgte, model.epohcs") && err.contains("no such setting"), "{err}");
        let err = with_overrides(&base, &over(r#"{"budget": "many"}"#), "test").unwrap_err().to_string();
        assert!(err.contains("invalid type") && err.contains("'settings' = test"), "{err}");
    }

    impl ParamGuard for Rate {
        type Error = String;

        fn check_ref(&self) -> Result<(), String> {
            if self.0 > 0.0 {
                Ok(())
            } else {
                Err(format!("rate {} must be > 0", self.0))
            }
        }
    }

    #[test]
    fn only_settings_that_pass_come_back_checked() {
        let ok = Rate(0.5).check().unwrap();
        assert_eq!(ok.as_ref().0, 0.5, "reads as the settings");
        assert_eq!(serde_json::to_string(&ok).unwrap(), "0.5");
        assert_eq!(Rate(-1.0).check().unwrap_err(), "rate -1 must be > 0");
        assert_eq!(ok.into_inner(), Rate(0.5));
    }
}
