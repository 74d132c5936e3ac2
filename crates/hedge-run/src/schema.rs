//! Versioned serde forms. A file hedge writes records the schema of its form (`schema`); a reader
//! upgrades an older form one step at a time, each step an explicit rewrite, instead of serde
//! defaults that guess what a field absent from an old file meant. A file without `schema` is
//! schema 1; one from a newer hedge is refused, naming both versions.
//!
//! A type takes part by deriving `Serialize` and `Deserialize` with `#[serde(remote = "Self")]`
//! (the derived code becomes inherent functions), implementing [`Schema`], and calling
//! [`versioned_serde!`](crate::versioned_serde) for the trait impls, which upgrade before
//! reading.

use serde_json::{Map, Value};

/// The field a versioned form records its schema in.
pub const SCHEMA_FIELD: &str = "schema";

/// A serde form with versions.
pub trait Schema {
    /// The schema written now.
    const CURRENT: u32;
    /// What the file is, for errors ("a reproduction's config.json").
    const WHAT: &'static str;

    /// Rewrites `form`, of schema `from`, as schema `from + 1` (`from` < [`Self::CURRENT`]).
    ///
    /// # Errors
    /// A message naming what the old form lacks or holds wrongly.
    fn upgrade(from: u32, form: &mut Map<String, Value>) -> Result<(), String>;
}

/// `form` upgraded to `T::CURRENT`, with its `schema` set to it.
///
/// # Errors
/// A `schema` that is no number, 0, or newer than `T::CURRENT`; an upgrade step's error.
pub fn upgrade<T: Schema>(mut form: Map<String, Value>) -> Result<Map<String, Value>, String> {
    let mut version = match form.get(SCHEMA_FIELD) {
        None => 1,
        Some(v) => v
            .as_u64()
            .and_then(|v| u32::try_from(v).ok())
            .ok_or_else(|| format!("{}: `{SCHEMA_FIELD}` is {v}, not a schema number", T::WHAT))?,
    };
    if version == 0 || version > T::CURRENT {
        return Err(format!(
            "{} has {SCHEMA_FIELD} {version}; this hedge reads 1 to {}: read it with the hedge that wrote it",
            T::WHAT,
            T::CURRENT
        ));
    }
    while version < T::CURRENT {
        T::upgrade(version, &mut form).map_err(|why| format!("{} of schema {version}: {why}", T::WHAT))?;
        version += 1;
    }
    form.insert(SCHEMA_FIELD.into(), version.into());
    Ok(form)
}

/// `Serialize` and `Deserialize` for a [`Schema`] type that derives both with
/// `#[serde(remote = "Self")]`: written as derived; read after [`upgrade`].
#[macro_export]
macro_rules! versioned_serde {
    ($ty:ty) => {
        impl $crate::__serde::Serialize for $ty {
            fn serialize<S: $crate::__serde::Serializer>(&self, serializer: S) -> ::std::result::Result<S::Ok, S::Error> {
                <$ty>::serialize(self, serializer)
            }
        }

        impl<'de> $crate::__serde::Deserialize<'de> for $ty {
            fn deserialize<D: $crate::__serde::Deserializer<'de>>(deserializer: D) -> ::std::result::Result<Self, D::Error> {
                use $crate::__serde::de::Error as _;
                let form = <$crate::__serde_json::Map<String, $crate::__serde_json::Value> as $crate::__serde::Deserialize>::deserialize(deserializer)?;
                let form = $crate::schema::upgrade::<$ty>(form).map_err(D::Error::custom)?;
                <$ty>::deserialize($crate::__serde_json::Value::Object(form)).map_err(D::Error::custom)
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::{Deserialize, Serialize};

    /// Schema 1 had `metres`; schema 2 `centimetres`; schema 3 added `label`, which schema 2
    /// files did not have and which reads as "old".
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    #[serde(remote = "Self")]
    struct Length {
        schema: u32,
        centimetres: u64,
        label: String,
    }

    impl Schema for Length {
        const CURRENT: u32 = 3;
        const WHAT: &'static str = "a length";

        fn upgrade(from: u32, form: &mut Map<String, Value>) -> Result<(), String> {
            match from {
                1 => {
                    let metres = form.remove("metres").and_then(|m| m.as_u64()).ok_or("no `metres`")?;
                    form.insert("centimetres".into(), (metres * 100).into());
                }
                _ => {
                    form.insert("label".into(), "old".into());
                }
            }
            Ok(())
        }
    }

    crate::versioned_serde!(Length);

    #[test]
    fn old_forms_upgrade_step_by_step_and_newer_ones_are_refused() {
        let v1: Length = serde_json::from_str(r#"{"metres": 2}"#).unwrap();
        assert_eq!(v1, Length { schema: 3, centimetres: 200, label: "old".into() });
        let v2: Length = serde_json::from_str(r#"{"schema": 2, "centimetres": 5}"#).unwrap();
        assert_eq!(v2, Length { schema: 3, centimetres: 5, label: "old".into() });
        let now = Length { schema: 3, centimetres: 7, label: "new".into() };
        let text = serde_json::to_string(&now).unwrap();
        assert_eq!(text, r#"{"schema":3,"centimetres":7,"label":"new"}"#);
        assert_eq!(serde_json::from_str::<Length>(&text).unwrap(), now);
        let e = serde_json::from_str::<Length>(r#"{"schema": 4, "centimetres": 1, "label": ""}"#).unwrap_err();
        assert!(e.to_string().contains("schema 4; this hedge reads 1 to 3"), "{e}");
        let e = serde_json::from_str::<Length>(r#"{"feet": 2}"#).unwrap_err();
        assert!(e.to_string().contains("a length of schema 1: no `metres`"), "{e}");
        let e = serde_json::from_str::<Length>(r#"{"schema": "two"}"#).unwrap_err();
        assert!(e.to_string().contains("not a schema number"), "{e}");
    }
}
