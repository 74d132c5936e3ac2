//! Numbers a result file leaves undefined, and why.
//!
//! JSON has no NaN: serde writes a non-finite `f64`, and a `None` metric, as `null`. A reader
//! who finds `"tau_ap": {"clean": null}` must not have to guess whether the metric failed, was
//! skipped or cannot exist. So every result file whose numbers can be undefined carries an
//! `undefined` list: each entry names the fields left `null` and the reason, and every `null`
//! of the file is in exactly one entry (a `null` no rule explains is listed under
//! [`UNEXPLAINED`], and the writer logs a warning).
//!
//! ```
//! use hedge_run::undefined::{explain_nulls, NullReason};
//! let report = serde_json::json!({"tau": null, "ap": 0.9, "ap_std": null});
//! let reasons = [
//!     NullReason::new("tau", "a point embedding has no uncertainty"),
//!     NullReason::new("*_std", "one seed: a spread needs two"),
//! ];
//! let undefined = explain_nulls(&report, &reasons);
//! assert_eq!(undefined[0].fields, ["tau"]);
//! assert_eq!(undefined[1].fields, ["ap_std"]);
//! ```

use serde::{Deserialize, Serialize};

/// The reason given to a `null` no rule explains (a bug to report: hedge should know).
pub const UNEXPLAINED: &str =
    "not finite for a reason hedge does not record (a bug: please report it with the command that wrote the file)";

/// Fields of a result file left `null` (undefined), and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Undefined {
    /// Dotted paths of the fields (`models.point.tau_ap.clean`, `gallery_probe[3].tau_knn`).
    pub fields: Vec<String>,
    pub why: String,
}

/// A rule: `null`s whose dotted path matches `pattern` are undefined because of `why`.
///
/// `pattern` is matched against the whole path; `*` stands for any run of characters,
/// dots included (`*tau_*` matches `models.mog1.tau_ap.clean_std`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NullReason {
    pub pattern: String,
    pub why: String,
}

impl NullReason {
    pub fn new(pattern: impl Into<String>, why: impl Into<String>) -> Self {
        NullReason { pattern: pattern.into(), why: why.into() }
    }
}

/// Every `null` of `value` (the serialised result), grouped by the first rule of `reasons`
/// whose pattern matches its path, in the rules' order; those no rule matches come last under
/// [`UNEXPLAINED`]. A top-level `undefined` field (the list itself) is not scanned.
pub fn explain_nulls<T: Serialize + ?Sized>(value: &T, reasons: &[NullReason]) -> Vec<Undefined> {
    let value = serde_json::to_value(value).unwrap_or(serde_json::Value::Null);
    let mut groups: Vec<Vec<String>> = vec![Vec::new(); reasons.len() + 1];
    for path in null_paths(&value) {
        let rule = reasons.iter().position(|r| glob_match(&r.pattern, &path)).unwrap_or(reasons.len());
        groups[rule].push(path);
    }
    let whys = reasons.iter().map(|r| r.why.as_str()).chain(std::iter::once(UNEXPLAINED));
    groups
        .into_iter()
        .zip(whys)
        .filter(|(fields, _)| !fields.is_empty())
        .map(|(fields, why)| Undefined { fields, why: why.to_string() })
        .collect()
}

/// The dotted paths of every `null` in `value`, leaving out a top-level `undefined` field.
pub fn null_paths(value: &serde_json::Value) -> Vec<String> {
    let mut out = Vec::new();
    walk(value, String::new(), &mut out);
    out
}

fn walk(value: &serde_json::Value, path: String, out: &mut Vec<String>) {
    match value {
        serde_json::Value::Null => out.push(path),
        serde_json::Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                walk(item, format!("{path}[{i}]"), out);
            }
        }
        serde_json::Value::Object(fields) => {
            for (key, item) in fields {
                if path.is_empty() && key == "undefined" {
                    continue;
                }
                let p = if path.is_empty() { key.clone() } else { format!("{path}.{key}") };
                walk(item, p, out);
            }
        }
        _ => {}
    }
}

/// The `null`s of a written file (its JSON text) that its own `undefined` list does not name:
/// empty for every file hedge writes (the tests check it).
pub fn unexplained_nulls(json: &serde_json::Value) -> Vec<String> {
    let listed: Vec<String> = json
        .get("undefined")
        .and_then(|u| serde_json::from_value::<Vec<Undefined>>(u.clone()).ok())
        .unwrap_or_default()
        .into_iter()
        .filter(|u| u.why != UNEXPLAINED)
        .flat_map(|u| u.fields)
        .collect();
    null_paths(json).into_iter().filter(|p| !listed.contains(p)).collect()
}

/// A one-line account of `undefined` for logs ("3 fields undefined: …").
pub fn summary_line(undefined: &[Undefined]) -> Option<String> {
    let n: usize = undefined.iter().map(|u| u.fields.len()).sum();
    (n > 0).then(|| {
        let whys: Vec<String> = undefined
            .iter()
            .map(|u| format!("{} ({} field{})", u.why, u.fields.len(), if u.fields.len() == 1 { "" } else { "s" }))
            .collect();
        format!("{n} field(s) undefined, listed under \"undefined\": {}", whys.join("; "))
    })
}

/// Whether `text` matches `pattern`, where `*` matches any run of characters.
fn glob_match(pattern: &str, text: &str) -> bool {
    let (p, t) = (pattern.as_bytes(), text.as_bytes());
    let (mut pi, mut ti) = (0, 0);
    // The last `*` seen and the text position it currently stands for (backtracking point).
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && p[pi] == b'*' {
            star = Some((pi, ti));
            pi += 1;
        } else if pi < p.len() && p[pi] == t[ti] {
            pi += 1;
            ti += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn globs_match_whole_paths() {
        assert!(glob_match("*tau_*", "models.mog1.tau_ap.clean_std"));
        assert!(glob_match("*_std", "verification_ap.clean_std"));
        assert!(!glob_match("*_std", "verification_ap.clean"));
        assert!(glob_match("gallery_probe[*].tau_knn", "gallery_probe[12].tau_knn"));
        assert!(!glob_match("tau", "tau_ap"));
        assert!(glob_match("*", ""));
        assert!(glob_match("a*b*c", "aXbYbZc"));
        assert!(!glob_match("a*b*c", "aXbYbZ"));
    }

    #[test]
    fn every_null_lands_in_one_group_and_the_first_matching_rule_wins() {
        #[derive(Serialize)]
        struct Report {
            a: f64,
            b: Option<f64>,
            rows: Vec<Option<f64>>,
            tau_std: Option<f64>,
        }
        let r = Report { a: f64::NAN, b: Some(1.0), rows: vec![Some(1.0), None], tau_std: None };
        let u = explain_nulls(&r, &[NullReason::new("tau*", "tau"), NullReason::new("*_std", "std")]);
        assert_eq!(
            u,
            vec![
                Undefined { fields: vec!["tau_std".into()], why: "tau".into() },
                Undefined { fields: vec!["a".into(), "rows[1]".into()], why: UNEXPLAINED.into() },
            ]
        );
    }

    #[test]
    fn a_file_is_checked_against_its_own_list() {
        let explained = json!({"x": null, "undefined": [{"fields": ["x"], "why": "no seeds"}]});
        assert!(unexplained_nulls(&explained).is_empty());
        let bare = json!({"x": null, "y": [1, null]});
        assert_eq!(unexplained_nulls(&bare), ["x", "y[1]"]);
        let flagged = json!({"x": null, "undefined": [{"fields": ["x"], "why": UNEXPLAINED}]});
        assert_eq!(unexplained_nulls(&flagged), ["x"]);
    }
}
