//! Settings validated once (linfa's `ParamGuard` idea): every configuration of hedge implements
//! [`ParamGuard::check_ref`]; [`ParamGuard::check`] hands back a [`Checked`] value, and the
//! functions that need valid settings take `Checked<…>`, so unchecked settings cannot reach them.

use std::ops::Deref;

use serde::Serialize;

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

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Serialize)]
    struct Rate(f64);

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
