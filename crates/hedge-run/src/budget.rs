//! One memory budget for every allocation a user's numbers drive.
//!
//! A command that is about to take memory in proportion to numbers a user typed (a batch, Monte
//! Carlo samples, candidates, projections, a pool, α values x repeats, an image header's sides)
//! first describes what it would take as a [`Footprint`] — an estimate of bytes as a function of
//! those numbers — and checks it against the [`MemoryBudget`] before any work starts. A footprint
//! over the budget is refused with the estimate, the budget, and for each number the largest value
//! that fits with the others unchanged, so a typo like `--batch 100000` or `--alphas 0:1:1e-12`
//! costs a second instead of an abort or the out-of-memory killer.
//!
//! The budget is `HEDGE_MEMORY_BUDGET` (bytes with an optional unit, `8GiB`, `500MB`, or a share
//! of the machine's memory, `60%`), else [`DEFAULT_SHARE`] of the machine's memory.

use crate::{Result, RunError};

/// The environment variable that sets the budget.
pub const BUDGET_ENV: &str = "HEDGE_MEMORY_BUDGET";
/// The share of the machine's memory one command may plan to take by default: leaves room for
/// the operating system, libtorch's own workspace and estimates that are off by a factor.
pub const DEFAULT_SHARE: f64 = 0.5;
/// Assumed when the machine's memory cannot be read (not Linux).
const FALLBACK_MACHINE_BYTES: u64 = 8 << 30;

/// How many bytes one command may plan to take, and where that number came from.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryBudget {
    pub bytes: f64,
    /// In words, for the error message ("half of this machine's 23.4 GiB").
    pub source: String,
}

impl MemoryBudget {
    /// The budget `HEDGE_MEMORY_BUDGET` sets, else [`DEFAULT_SHARE`] of the machine's memory.
    ///
    /// # Errors
    /// [`RunError::InvalidConfig`] when the variable is set but not a size or a share.
    pub fn from_env() -> Result<Self> {
        match std::env::var(BUDGET_ENV) {
            Ok(text) if !text.trim().is_empty() => Self::parse(&text, machine_bytes()),
            _ => Ok(Self::share(DEFAULT_SHARE, machine_bytes())),
        }
    }

    /// `share` of `machine` bytes.
    pub fn share(share: f64, machine: u64) -> Self {
        MemoryBudget {
            bytes: share * machine as f64,
            source: format!(
                "{:.0}% of this machine's {}; set {BUDGET_ENV} (e.g. 16GiB or 80%) to change it",
                share * 100.0,
                human_bytes(machine as f64)
            ),
        }
    }

    /// Reads a budget written as bytes with an optional unit (`123`, `500MB`, `8GiB`, `1.5TB`)
    /// or as a share of `machine` (`60%`).
    pub fn parse(text: &str, machine: u64) -> Result<Self> {
        let bad = || RunError::InvalidConfig {
            field: "HEDGE_MEMORY_BUDGET",
            value: text.to_string(),
            reason: "expected a size such as 16GiB, 500MB or 2000000000, or a share of this machine's memory \
                         such as 60%"
                .into(),
        };
        let t = text.trim();
        if let Some(share) = t.strip_suffix('%') {
            let share: f64 = share.trim().parse().map_err(|_| bad())?;
            if !(share > 0.0 && share <= 100.0) {
                return Err(bad());
            }
            let mut budget = Self::share(share / 100.0, machine);
            budget.source = format!("{BUDGET_ENV}={t} of this machine's {}", human_bytes(machine as f64));
            return Ok(budget);
        }
        let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
        let (number, unit) = t.split_at(split);
        let number: f64 = number.parse().map_err(|_| bad())?;
        let scale = match unit.trim().to_ascii_lowercase().as_str() {
            "" | "b" => 1.0,
            "kb" => 1e3,
            "mb" => 1e6,
            "gb" => 1e9,
            "tb" => 1e12,
            "kib" => 1024.0,
            "mib" => 1024f64.powi(2),
            "gib" => 1024f64.powi(3),
            "tib" => 1024f64.powi(4),
            _ => return Err(bad()),
        };
        let bytes = number * scale;
        if !(bytes.is_finite() && bytes >= 1.0) {
            return Err(bad());
        }
        Ok(MemoryBudget { bytes, source: format!("{BUDGET_ENV}={t}") })
    }

    /// Refuses `footprint` when its estimate exceeds the budget.
    ///
    /// # Errors
    /// [`RunError::OverBudget`]: the estimate, the budget, and for each of the footprint's
    /// numbers the largest value that fits with the others unchanged.
    pub fn check(&self, footprint: &Footprint) -> Result<()> {
        let values: Vec<f64> = footprint.knobs.iter().map(|k| k.value).collect();
        let need = (footprint.bytes)(&values);
        if need.is_finite() && need <= self.bytes {
            return Ok(());
        }
        let mut fixes = Vec::new();
        for (i, knob) in footprint.knobs.iter().enumerate() {
            if knob.flag.is_empty() {
                continue;
            }
            if let Some(fit) = self.largest_fit(footprint, &values, i) {
                fixes.push(format!("{} {}", knob.flag, group_digits(fit)));
            }
        }
        let settings = footprint
            .knobs
            .iter()
            .filter(|k| !k.flag.is_empty())
            .map(|k| format!("{} {}", k.flag, group_digits(k.value)))
            .collect::<Vec<_>>();
        let fixes = if fixes.is_empty() {
            "None of these numbers alone brings it within the budget; lower several, or raise the budget".to_string()
        } else {
            format!("Largest values that fit, the others unchanged: {}", fixes.join("; "))
        };
        Err(RunError::OverBudget(format!(
            "{} would take about {} ({}), over the memory budget of {} ({}). {fixes}",
            footprint.what,
            human_bytes(need),
            settings.join(", "),
            human_bytes(self.bytes),
            self.source
        )))
    }

    /// The largest whole value of knob `i` (at least its minimum, below its value) whose footprint
    /// fits, the other knobs at `values`; `None` when even the minimum does not fit.
    fn largest_fit(&self, footprint: &Footprint, values: &[f64], i: usize) -> Option<f64> {
        let knob = &footprint.knobs[i];
        let fits = |v: f64| {
            let mut at = values.to_vec();
            at[i] = v;
            let need = (footprint.bytes)(&at);
            need.is_finite() && need <= self.bytes
        };
        let (mut lo, mut hi) = (knob.min, knob.value.min(9.0e15));
        if !fits(lo) || hi <= lo {
            return None;
        }
        // Invariant: fits(lo), !fits(hi) (or hi is the value itself, which does not fit).
        while hi - lo > 1.0 {
            let mid = ((lo + hi) / 2.0).floor();
            if fits(mid) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Some(lo)
    }
}

/// A number a user gave that a footprint grows with.
#[derive(Debug, Clone, PartialEq)]
pub struct Knob {
    /// The flag (or config field) the user sets it with, as they would type it (`--batch`);
    /// empty for a slot the footprint does not use (left out of messages).
    pub flag: String,
    pub value: f64,
    /// The smallest value the command accepts (the search for a fitting value stops there).
    pub min: f64,
}

/// Bytes as a function of a footprint's knob values.
pub type BytesOf<'a> = Box<dyn Fn(&[f64]) -> f64 + 'a>;

/// An estimate of the bytes a command would take, as a function of the numbers a user gave.
pub struct Footprint<'a> {
    /// What takes the memory, in words ("hib train: one training step").
    pub what: String,
    pub knobs: Vec<Knob>,
    /// Bytes for the knobs' values, in the order of `knobs`; must grow with each of them.
    pub bytes: BytesOf<'a>,
}

impl<'a> Footprint<'a> {
    /// A footprint of `what` whose bytes `bytes` computes from the knobs' values.
    pub fn new(what: impl Into<String>, bytes: impl Fn(&[f64]) -> f64 + 'a) -> Self {
        Footprint { what: what.into(), knobs: Vec::new(), bytes: Box::new(bytes) }
    }

    /// Adds the number `value` given with `flag` (at least `min`).
    pub fn knob(mut self, flag: impl Into<String>, value: f64, min: f64) -> Self {
        self.knobs.push(Knob { flag: flag.into(), value, min });
        self
    }

    /// Checks the footprint against [`MemoryBudget::from_env`].
    pub fn check(&self) -> Result<()> {
        MemoryBudget::from_env()?.check(self)
    }
}

/// The machine's memory (`MemTotal` of `/proc/meminfo`), or 8 GiB where it cannot be read.
pub fn machine_bytes() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| {
            let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
            let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kib * 1024)
        })
        .unwrap_or(FALLBACK_MACHINE_BYTES)
}

/// `bytes` with a binary unit (`12.0 GiB`); astronomically large values in scientific notation.
pub fn human_bytes(bytes: f64) -> String {
    const UNITS: [&str; 5] = ["bytes", "KiB", "MiB", "GiB", "TiB"];
    if !bytes.is_finite() || bytes >= 1024f64.powi(5) {
        return format!("{bytes:.1e} bytes");
    }
    let mut value = bytes;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{value:.0} bytes")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// A whole number with thousands separators (`1,000,000`); non-whole or huge ones as given.
pub fn group_digits(value: f64) -> String {
    if value.fract() != 0.0 || value.abs() >= 1e16 {
        return format!("{value}");
    }
    let digits = format!("{}", value.abs() as u64);
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if value < 0.0 {
        format!("-{out}")
    } else {
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(bytes: f64) -> MemoryBudget {
        MemoryBudget { bytes, source: "test".into() }
    }

    #[test]
    fn a_footprint_within_the_budget_passes_and_one_over_it_names_the_largest_values_that_fit() {
        // 4 bytes x batch x samples: 1,000 x 8 x 4 = 32,000 bytes.
        let fp =
            Footprint::new("a step", |v| 4.0 * v[0] * v[1]).knob("--batch", 1000.0, 2.0).knob("--samples", 8.0, 1.0);
        budget(32_000.0).check(&fp).unwrap();
        let e = budget(10_000.0).check(&fp).unwrap_err().to_string();
        // 10,000 / 32 = 312.5 -> 312; 10,000 / 4,000 = 2.5 -> 2.
        assert!(e.contains("--batch 312") && e.contains("--samples 2"), "{e}");
        assert!(e.contains("31.2 KiB") && e.contains("9.8 KiB") && e.contains("a step"), "{e}");
        // A number whose minimum does not fit either is not offered.
        let e = budget(10.0).check(&fp).unwrap_err().to_string();
        assert!(e.contains("None of these numbers alone"), "{e}");
    }

    #[test]
    fn absurd_values_are_refused_without_overflow() {
        let fp = Footprint::new("a sweep", |v| 1024.0 * v[0] * v[1]).knob("--alphas", 1e12, 1.0).knob(
            "--repeats",
            1e12,
            1.0,
        );
        let e = budget(1e9).check(&fp).unwrap_err().to_string();
        assert!(e.contains("--alphas") && e.contains("bytes"), "{e}");
    }

    #[test]
    fn budgets_parse_from_sizes_and_shares() {
        let gib = 1024f64.powi(3);
        assert_eq!(MemoryBudget::parse("8GiB", 0).unwrap().bytes, 8.0 * gib);
        assert_eq!(MemoryBudget::parse("500 MB", 0).unwrap().bytes, 5e8);
        assert_eq!(MemoryBudget::parse("2000", 0).unwrap().bytes, 2000.0);
        assert_eq!(MemoryBudget::parse("25%", 1 << 30).unwrap().bytes, gib / 4.0);
        for bad in ["lots", "0", "-5GB", "150%", "8 parsecs"] {
            let e = MemoryBudget::parse(bad, 1 << 30).unwrap_err().to_string();
            assert!(e.contains("HEDGE_MEMORY_BUDGET") && e.contains("16GiB"), "{bad}: {e}");
        }
        assert_eq!(human_bytes(1536.0), "1.5 KiB");
        assert_eq!(group_digits(1234567.0), "1,234,567");
    }
}
