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
